#!/usr/bin/python3
"""What training-operator v1.9 would make of a PyTorchJob, as bash assignments for run_pytorchjob.sh.

  pytorchjob_plan.py [--venv LOCAL_VENV] MANIFEST PREFIX SOURCE PVC_ROOT

MANIFEST holds one PyTorchJob (kubeflow.org/v1): a Master and Workers without an elasticPolicy,
or Workers only with one.
Prints, for `source`:
  JOB NAMESPACE MASTER_PORT NPROC (processes per pod, a number) WORLD (ranks in all)
  PODS          pod names, node rank order: <job>-master-0, <job>-worker-0, ...
  PVCS          the claim names the pods mount (a directory PVC_ROOT/<claim> stands for each)
  ARGV_<i>      pod i's `pytorch` container command + args
  ENV_<i>       its env (NAME=VALUE), then what the operator appends to it, in the operator's order
  VENV_<i>      LOCAL_VENV when pod i's command or env names its image's venv, else empty
  MOUNTS_<i>    PVC_ROOT/<claim>:<mountPath> for each claim pod i mounts
PREFIX "-" keeps every path as the manifest has it (the images tests run the images themselves).
The operator's env (pkg/controller.v1/pytorch/envvar.go and master.go at v1.9.0), for a job with a
Master and no elasticPolicy: PYTHONUNBUFFERED=1; MASTER_PORT, PET_MASTER_PORT (the container's
`pytorchjob-port`, defaulted to 23456); MASTER_ADDR, PET_MASTER_ADDR (<job>-master-0, the Master's
Service); WORLD_SIZE (all replicas x nprocPerNode, 1 when that is not a number); RANK and
PET_NODE_RANK (the Master 0, worker i i+1); PET_NPROC_PER_NODE (spec.nprocPerNode, defaulted to
"auto"); PET_NNODES (all replicas). For Workers with an elasticPolicy (elastic.go): PYTHONUNBUFFERED=1,
then PET_RDZV_ENDPOINT (rdzvHost, default <job>-worker-0, and rdzvPort, default the container's
`pytorchjob-port`), PET_RDZV_BACKEND (default c10d), PET_NNODES (minReplicas:maxReplicas, else the
replicas), PET_MAX_RESTARTS, PET_RDZV_ID and PET_RDZV_CONF (k=v,k=v) where given; no MASTER_*, RANK
or WORLD_SIZE (PET_N_PROC_PER_NODE, which torchrun does not read, is refused: the command must say
--nproc_per_node). WORLD is then the replicas' ranks. Kubernetes adds HOSTNAME (the pod name).
Paths are mapped as the images lay them out: a directory the container image's target of docker/Dockerfile copies
from the source tree (`cp -r /src/REL /staging/DIR`) to SOURCE/REL; the rest of /usr/local/ (the
images' `cmake --install` prefix) to PREFIX; the venv that target makes (`python3 -m venv DIR`,
tutti-worker-torch2's /opt/torch2 with PyPI's torch) to LOCAL_VENV, a venv with the same torch (a
command that names the image's venv without --venv is refused); a PersistentVolumeClaim's mountPath
to PVC_ROOT/<claim>. Nothing else is changed.
"""
import argparse
import os
import re
import shlex
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts"))
from dockerfile_stages import target_text  # noqa: E402

IMAGE_PREFIX = "/usr/local/"
DEFAULT_PORT = 23456
IMAGE = re.compile(r"^(?:.+/)?tutti-(?P<name>[a-z0-9-]+):[A-Za-z0-9._-]+$")


def fail(message):
    sys.exit(f"pytorchjob_plan: {message}")


class Mapper:
    def __init__(self, prefix, source, pvc_root, venv):
        self.prefix, self.source, self.pvc_root = prefix.rstrip("/"), source, pvc_root
        self.venv = venv.rstrip("/") if venv else None

    def image_venv(self, container):
        """The venv the container image's target makes (`python3 -m venv /DIR`), or None."""
        image = IMAGE.match(str(container.get("image", "")))
        if not image:
            return None
        text = self.image_text(image.group("name"))
        found = re.search(r"python3 -m venv (/\S+)", text or "")
        return found.group(1).rstrip("/") if found else None

    def image_text(self, name):
        """What docker/Dockerfile's target NAME is made of, or None."""
        dockerfile = os.path.join(self.source, "docker", "Dockerfile")
        return target_text(dockerfile, name) if os.path.exists(dockerfile) else None

    def for_container(self, container, pod_spec):
        """(from, to) path prefixes for this container, most specific first."""
        if self.prefix == "-":  # the image itself runs: its paths stay
            return []
        pairs = []
        venv = self.image_venv(container)
        if venv and self.venv:  # (without --venv, main() refuses a command that names it)
            pairs.append((venv, self.venv))
        volumes = {v.get("name"): v for v in pod_spec.get("volumes") or []}
        for m in container.get("volumeMounts") or []:
            claim = (volumes.get(m.get("name")) or {}).get("persistentVolumeClaim")
            if claim:
                pairs.append((m["mountPath"], os.path.join(self.pvc_root, claim["claimName"])))
        image = IMAGE.match(str(container.get("image", "")))
        if image:
            for rel, target in re.findall(r"cp -r /src/(\S+) /staging(/\S+)",
                                          self.image_text(image.group("name")) or ""):
                pairs.append((target.rstrip("/"), os.path.join(self.source, rel)))
        pairs.append((IMAGE_PREFIX.rstrip("/"), self.prefix))
        return sorted(pairs, key=lambda p: -len(p[0]))

    @staticmethod
    def word(word, pairs):
        word = str(word)
        lead, path = "", word
        if word.startswith("--") and "=" in word:
            lead, path = word.split("=", 1)
            lead += "="
        for src, dst in pairs:
            if path == src or path.startswith(src + "/"):
                return lead + dst + path[len(src):]
        return word


def pytorch_container(spec, role):
    containers = (spec.get("containers") or [])
    found = [c for c in containers if c.get("name") == "pytorch"]
    if len(containers) != 1 or not found:
        fail(f"the {role} pod must have exactly one container, named `pytorch`")
    return found[0]


def master_port(container):
    for p in container.get("ports") or []:
        if p.get("name") == "pytorchjob-port":
            return int(p["containerPort"])
    return DEFAULT_PORT


def uses(words, directory):
    """Whether a command word or env value is, or lies under, directory (also as --opt=PATH)."""
    return any(w == directory or w.startswith(directory + "/") or f"={directory}/" in w
               for w in map(str, words))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--venv", help="the local venv that stands for the image's venv")
    parser.add_argument("manifest")
    parser.add_argument("prefix")
    parser.add_argument("source")
    parser.add_argument("pvc_root")
    args = parser.parse_args()
    path, prefix, source, pvc_root = args.manifest, args.prefix, args.source, args.pvc_root
    with open(path) as f:
        jobs = [d for d in yaml.safe_load_all(f) if d and d.get("kind") == "PyTorchJob"]
    if len(jobs) != 1:
        fail(f"{path} must hold one PyTorchJob, it holds {len(jobs)}")
    job = jobs[0]
    name = job["metadata"]["name"]
    ns = job["metadata"].get("namespace", "default")
    spec = job["spec"]
    elastic = spec.get("elasticPolicy")
    replicas = spec["pytorchReplicaSpecs"]
    if elastic is None and "Master" not in replicas:
        fail("a job without a Master is run here only with an elasticPolicy")
    if elastic is not None and set(replicas) != {"Worker"}:
        fail("an elasticPolicy is run here for a job of Workers only")
    counts = {role: int(r.get("replicas", 1)) for role, r in replicas.items()}
    total = sum(counts.values())
    mapper = Mapper(prefix, source, pvc_root, args.venv)
    if elastic is None:
        nproc = str(spec.get("nprocPerNode", "auto"))
        if not nproc.isdigit():
            fail(f"nprocPerNode {nproc!r}: only a number of processes per pod is run here")
        master = pytorch_container(replicas["Master"]["template"]["spec"], "Master")
        port = master_port(master)
        master_addr = f"{name}-master-0"
    else:
        worker = pytorch_container(replicas["Worker"]["template"]["spec"], "Worker")
        words = [str(w) for w in list(worker.get("command") or []) + list(worker.get("args") or [])]
        nproc = next((words[i + 1] for i, w in enumerate(words[:-1])
                      if w in ("--nproc_per_node", "--nproc-per-node")), None)
        if elastic.get("nProcPerNode") is not None or nproc is None or not nproc.isdigit():
            fail("an elastic job's command must give --nproc_per_node N (the operator passes "
                 "elasticPolicy.nProcPerNode as PET_N_PROC_PER_NODE, which torchrun does not read)")
        port = int(elastic.get("rdzvPort") or master_port(worker))
        endpoint = f"{elastic.get('rdzvHost') or name + '-worker-0'}:{port}"
        low, high = elastic.get("minReplicas"), elastic.get("maxReplicas")
        elastic_env = [f"PET_RDZV_ENDPOINT={endpoint}",
                       f"PET_RDZV_BACKEND={elastic.get('rdzvBackend', 'c10d')}",
                       f"PET_NNODES={low}:{high}" if low is not None or high is not None
                       else f"PET_NNODES={counts['Worker']}"]
        if elastic.get("maxRestarts") is not None:
            elastic_env.append(f"PET_MAX_RESTARTS={elastic['maxRestarts']}")
        if elastic.get("rdzvId") is not None:
            elastic_env.append(f"PET_RDZV_ID={elastic['rdzvId']}")
        if elastic.get("rdzvConf"):
            elastic_env.append("PET_RDZV_CONF=" + ",".join(f"{c['key']}={c['value']}"
                                                          for c in elastic["rdzvConf"]))
    nproc_int = int(nproc)
    pods, argvs, envs, venvs, mounts, claims = [], [], [], [], [], set()
    for role in ("Master", "Worker"):
        if role not in replicas:
            continue
        pod_spec = replicas[role]["template"]["spec"]
        container = pytorch_container(pod_spec, role)
        pairs = mapper.for_container(container, pod_spec)
        image_venv = mapper.image_venv(container)
        words = list(container.get("command") or []) + list(container.get("args") or [])
        values = [e.get("value", "") for e in container.get("env") or []]
        venv_used = bool(image_venv) and uses(words + values, image_venv) and prefix != "-"
        if venv_used and not args.venv:
            fail(f"the {role}'s command or env names {image_venv}, the venv of image "
                 f"{container.get('image')}: give --venv LOCAL_VENV, a venv with the same packages")
        volumes = {v.get("name"): v for v in pod_spec.get("volumes") or []}
        pod_mounts = []
        for m in container.get("volumeMounts") or []:
            claim = (volumes.get(m.get("name")) or {}).get("persistentVolumeClaim")
            if claim:
                claims.add(claim["claimName"])
                pod_mounts.append(f"{os.path.join(pvc_root, claim['claimName'])}:{m['mountPath']}")
        for index in range(counts[role]):
            rank = index + 1 if role == "Worker" else index
            pod = f"{name}-{role.lower()}-{index}"
            env = []
            for e in container.get("env") or []:
                if "value" not in e:
                    fail(f"env {e.get('name')} has no plain value (valueFrom is not run here)")
                env.append(f"{e['name']}={mapper.word(e['value'], pairs)}")
            if elastic is None:
                env += ["PYTHONUNBUFFERED=1",
                        f"MASTER_PORT={port}", f"PET_MASTER_PORT={port}",
                        f"MASTER_ADDR={master_addr}", f"PET_MASTER_ADDR={master_addr}",
                        f"WORLD_SIZE={total * nproc_int}", f"RANK={rank}", f"PET_NODE_RANK={rank}",
                        f"PET_NPROC_PER_NODE={nproc}", f"PET_NNODES={total}"]
            else:
                env += ["PYTHONUNBUFFERED=1"] + elastic_env
            env.append(f"HOSTNAME={pod}")
            pods.append(pod)
            argvs.append([mapper.word(w, pairs) for w in words])
            envs.append(env)
            venvs.append(mapper.venv if venv_used else "")
            mounts.append(pod_mounts)
    out = [f"JOB={shlex.quote(name)}", f"NAMESPACE={shlex.quote(ns)}", f"MASTER_PORT={port}",
           f"NPROC={nproc_int}", f"WORLD={total * nproc_int}",
           f"ELASTIC={'1' if elastic is not None else ''}"]

    def array(key, words):
        out.append(f"{key}=({' '.join(shlex.quote(str(w)) for w in words)})")

    array("PODS", pods)
    array("PVCS", sorted(claims))
    for i, (argv, env, venv) in enumerate(zip(argvs, envs, venvs)):
        array(f"ARGV_{i}", argv)
        array(f"ENV_{i}", env)
        array(f"MOUNTS_{i}", mounts[i])
        out.append(f"VENV_{i}={shlex.quote(venv)}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
