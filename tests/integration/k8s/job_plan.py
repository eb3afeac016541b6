#!/usr/bin/python3
"""What the operator would make of a manifest, as bash assignments for run_manifest.sh.

  job_plan.py MANIFEST PREFIX

PREFIX "-" keeps every path as the manifest has it (the containers of the images tests run the
images themselves).
MANIFEST holds an MPIJob (kubeflow.org/v2beta1) or a TrainJob with its ClusterTrainingRuntime.
Prints, for `source`:
  JOB NAMESPACE KIND SLOTS SSH_PORT
  WORKER_PODS    pod names, in hostfile order (<job>-worker-<i>, or <trainjob>-node-0-<i>)
  WORKER_HOSTS   the hostfile's host names (mpi-operator: <job>-worker-<i>.<job>.<ns>.svc;
                 Trainer: <trainjob>-node-0-<i>.<trainjob>)
  MPI_IMPLEMENTATION  the MPIJob's mpiImplementation (OpenMPI, Intel, MPICH), which sets the
                 hostfile's format and the env the operator adds
  LAUNCHER_HOST  runLauncherAsWorker: the launcher's name at the hostfile's head (<job>-launcher.
                 <job>.<ns>.svc), whose slots it runs itself; else empty
  HOSTFILE       /etc/mpi/hostfile's text, exactly as the operator writes it
  LAUNCHER_ARGV  the launcher container's command + args
  LAUNCHER_ENV   its env (NAME=VALUE), then what the operator adds to it
  WORKER_ARGV    the worker container's command + args
Paths under /usr/local/ (the images' `cmake --install` prefix) are mapped to PREFIX, the build's
own `cmake --install` tree, except what an image's Dockerfile copies from the source tree (`cp -r
/src/examples /staging/usr/local/share/tutti/examples`), which is mapped to the source tree;
nothing else is changed.
"""
import os
import re
import shlex
import sys

import yaml

IMAGE_PREFIX = "/usr/local/"


def fail(message):
    sys.exit(f"job_plan: {message}")


SOURCE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def source_copies():
    """(image path, source path) for what the images' Dockerfiles copy from the source tree
    (`cp -r /src/REL /staging/DIR`: the examples), most specific first."""
    pairs = []
    docker = os.path.join(SOURCE, "docker")
    for name in sorted(os.listdir(docker)) if os.path.isdir(docker) else []:
        if name == "Dockerfile" or name.endswith(".Dockerfile"):
            with open(os.path.join(docker, name)) as f:
                for rel, target in re.findall(r"cp -r /src/(\S+) /staging(/\S+)", f.read()):
                    pairs.append((target.rstrip("/"), os.path.join(SOURCE, rel)))
    return sorted(set(pairs), key=lambda p: -len(p[0]))


COPIES = source_copies()


def mapped(word, prefix):
    word = str(word)
    if prefix == "-":
        return word
    for image_path, source_path in COPIES:
        if word == image_path or word.startswith(image_path + "/"):
            return source_path + word[len(image_path):]
    if word.startswith(IMAGE_PREFIX):
        return prefix.rstrip("/") + "/" + word[len(IMAGE_PREFIX):]
    return word


def env_pairs(env, prefix):
    pairs = []
    for e in env or []:
        if "value" not in e:
            fail(f"env {e.get('name')} has no plain value (valueFrom is not run here)")
        pairs.append(f"{e['name']}={mapped(e['value'], prefix)}")
    return pairs


def only_container(pod, role):
    containers = (pod or {}).get("containers") or []
    if len(containers) != 1:
        fail(f"the {role} pod must have exactly one container, it has {len(containers)}")
    return containers[0]


def ssh_port(container):
    probe = (container.get("readinessProbe") or {}).get("tcpSocket") or {}
    return int(probe.get("port", 22))


def openmpi_env(slots):
    """What mpi-operator v2beta1 and Trainer's MPI plugin add to an OpenMPI launcher's env."""
    return ["OMPI_MCA_orte_keep_fqdn_hostnames=true",
            "OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile",
            "OMPI_MCA_plm_rsh_args=-o ConnectionAttempts=10",
            f"OMPI_MCA_orte_set_default_slots={slots}"]


def operator_env(implementation, slots):
    """mpi-operator v2beta1's launcher env per mpiImplementation (its controller's
    ompiEnvVars, intelEnvVars and mpichEnvVars, and the slots variable of the first two)."""
    if implementation == "OpenMPI":
        return openmpi_env(slots)
    if implementation == "Intel":
        return ["I_MPI_HYDRA_HOST_FILE=/etc/mpi/hostfile",
                "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS=-o ConnectionAttempts=10",
                f"I_MPI_PERHOST={slots}"]
    if implementation == "MPICH":
        return ["HYDRA_HOST_FILE=/etc/mpi/hostfile",
                "HYDRA_LAUNCH_EXTRA_ARGS=-o ConnectionAttempts=10"]
    fail(f"mpiImplementation {implementation!r} is none of OpenMPI, Intel, MPICH")


def hostfile_line(implementation, host, slots):
    """The operator's hostfile: Open MPI's `host slots=N`, Hydra's `host:N`."""
    return f"{host} slots={slots}\n" if implementation == "OpenMPI" else f"{host}:{slots}\n"


def plan_mpijob(job):
    spec = job["spec"]
    name = job["metadata"]["name"]
    ns = job["metadata"].get("namespace", "default")
    implementation = spec.get("mpiImplementation", "OpenMPI")
    slots = spec.get("slotsPerWorker", 1)
    replicas = spec["mpiReplicaSpecs"]
    workers = replicas["Worker"].get("replicas", 1)
    launcher = only_container(replicas["Launcher"]["template"]["spec"], "Launcher")
    worker = only_container(replicas["Worker"]["template"]["spec"], "Worker")
    pods = [f"{name}-worker-{i}" for i in range(workers)]
    hosts = [f"{pod}.{name}.{ns}.svc" for pod in pods]
    env = list(launcher.get("env") or []) + [{"name": "K_MPI_JOB_ROLE", "value": "launcher"}]
    return dict(JOB=name, NAMESPACE=ns, KIND="MPIJob", SLOTS=slots, pods=pods, hosts=hosts,
                implementation=implementation,
                # runLauncherAsWorker: the launcher pod heads the hostfile and runs ranks too.
                launcher_host=(f"{name}-launcher.{name}.{ns}.svc"
                               if spec.get("runLauncherAsWorker") else ""),
                launcher_argv=list(launcher.get("command") or []) + list(launcher.get("args") or []),
                launcher_env=env, operator_env=operator_env(implementation, slots),
                worker_argv=list(worker.get("command") or []) + list(worker.get("args") or []),
                SSH_PORT=ssh_port(worker))


def plan_trainjob(trainjob, runtimes):
    spec = trainjob["spec"]
    name = trainjob["metadata"]["name"]
    ns = trainjob["metadata"].get("namespace", "default")
    runtime = runtimes.get(spec["runtimeRef"]["name"])
    if runtime is None:
        fail(f"no ClusterTrainingRuntime {spec['runtimeRef']['name']!r} in the manifest")
    policy = runtime["spec"]["mlPolicy"]
    mpi = policy["mpi"]
    if mpi.get("runLauncherAsNode"):
        fail("runLauncherAsNode is not run here")
    trainer = spec.get("trainer") or {}
    nodes = trainer.get("numNodes", policy.get("numNodes", 1))
    slots = trainer.get("numProcPerNode", mpi.get("numProcPerNode", 1))
    jobs = {j["name"]: j for j in runtime["spec"]["template"]["spec"]["replicatedJobs"]}
    launcher = only_container(jobs["launcher"]["template"]["spec"]["template"]["spec"], "launcher")
    node = only_container(jobs["node"]["template"]["spec"]["template"]["spec"], "node")
    # JobSet pod hostnames: <jobset>-<replicatedJob>-<job index>-<pod index>, subdomain <jobset>.
    pods = [f"{name}-node-0-{i}" for i in range(nodes)]
    hosts = [f"{pod}.{name}" for pod in pods]
    command = trainer.get("command") or launcher.get("command") or []
    args = trainer.get("args") or launcher.get("args") or []
    env = list(launcher.get("env") or []) + list(trainer.get("env") or [])
    return dict(JOB=name, NAMESPACE=ns, KIND="TrainJob", SLOTS=slots, pods=pods, hosts=hosts,
                implementation="OpenMPI", launcher_host="",
                launcher_argv=list(command) + list(args), launcher_env=env,
                operator_env=openmpi_env(slots),
                worker_argv=list(node.get("command") or []) + list(node.get("args") or []),
                SSH_PORT=ssh_port(node))


def main():
    if len(sys.argv) != 3:
        fail("usage: job_plan.py MANIFEST PREFIX")
    path, prefix = sys.argv[1], sys.argv[2]
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    jobs = [d for d in docs if d.get("kind") in ("MPIJob", "TrainJob")]
    if len(jobs) != 1:
        fail(f"{path} must hold one MPIJob or TrainJob, it holds {len(jobs)}")
    runtimes = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "ClusterTrainingRuntime"}
    job = jobs[0]
    plan = plan_mpijob(job) if job["kind"] == "MPIJob" else plan_trainjob(job, runtimes)
    rank_hosts = ([plan["launcher_host"]] if plan["launcher_host"] else []) + plan["hosts"]
    hostfile = "".join(hostfile_line(plan["implementation"], h, plan["SLOTS"]) for h in rank_hosts)
    out = []
    for key in ("JOB", "NAMESPACE", "KIND", "SLOTS", "SSH_PORT"):
        out.append(f"{key}={shlex.quote(str(plan[key]))}")
    out.append(f"MPI_IMPLEMENTATION={shlex.quote(plan['implementation'])}")
    out.append(f"LAUNCHER_HOST={shlex.quote(plan['launcher_host'])}")
    out.append(f"HOSTFILE={shlex.quote(hostfile)}")
    arrays = {
        "WORKER_PODS": plan["pods"],
        "WORKER_HOSTS": plan["hosts"],
        "LAUNCHER_ARGV": [mapped(w, prefix) for w in plan["launcher_argv"]],
        "LAUNCHER_ENV": env_pairs(plan["launcher_env"], prefix) + plan["operator_env"],
        "WORKER_ARGV": [mapped(w, prefix) for w in plan["worker_argv"]],
    }
    for key, words in arrays.items():
        out.append(f"{key}=({' '.join(shlex.quote(str(w)) for w in words)})")
    print("\n".join(out))


if __name__ == "__main__":
    main()
