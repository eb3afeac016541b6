#!/usr/bin/python3
"""Checks Kubernetes manifests (examples/k8s) without a cluster.

  k8s_validate.py [--crds DIR] [--docker DIR] [--cmake FILE] [--installed PREFIX] FILE...

Every YAML document must be a kind this script knows. Kubeflow kinds (MPIJob v2beta1, PyTorchJob v1,
TrainJob and ClusterTrainingRuntime v1alpha1) are checked against the openAPIV3Schema of the real
CRDs in --crds (default tests/integration/k8s/crds, where they are kept xz-compressed; a CRD file
there is NAME.yaml or NAME.yaml.xz), strictly: a field the schema does not list is an error, as
`kubectl apply --validate=strict` makes it. A PyTorchJob is also checked against what training-operator v1.9's
admission webhook and controller refuse but its CRD does not say: a DNS-1035 job name, only Master
and Worker replicas, exactly one Master, a container named `pytorch` in each, a known
restartPolicy, and a numeric nprocPerNode or one of auto/cpu/gpu. Core kinds (ServiceAccount, Role, RoleBinding, PersistentVolumeClaim)
are checked against the small structural schemas in k8s_core_schemas.py. CEL rules
(x-kubernetes-validations) and defaulting are the API server's and are not run here.

Then what the manifests promise about the images:
- every image is `[REGISTRY/]tutti-NAME:VERSION` where NAME is a target of docker/Dockerfile and
  VERSION is the project's version (CMakeLists.txt);
- every absolute path in a container's command, args and env values is one that image promises
  (its target's TUTTI_IMAGE_PROVIDES list, which the image build itself checks) or lies under a
  volume mounted in that container (its own or the operator's: /etc/mpi, sshAuthMountPath); a path
  in a directory the Dockerfile copies from the source tree (the examples) must exist there. For a
  tuttirun command line, the rank command after `--` runs in the workers: it is checked against
  the worker images of the job;
- every TUTTI_* and KUBEXEC_* variable a container sets is one tutti reads (the registry in
  runtime/src/core/env.cc, kubexec/config.cc): a misspelt name would be ignored silently;
- with --installed PREFIX (a `cmake --install` tree), every promised /usr/local path exists in it
  or is made by a step of that Dockerfile.

Exit status 0 when every document passes, 1 otherwise (each problem printed on its own line).
"""
import argparse
import lzma
import os
import re
import sys

import jsonschema
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dockerfile_stages import stages, target_text  # noqa: E402
import k8s_core_schemas  # noqa: E402

# libyaml's loader where PyYAML has it: the CRDs are 2.4 MB of YAML.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
IMAGE = re.compile(r"^(?:(?P<registry>.+)/)?tutti-(?P<name>[a-z0-9-]+):(?P<tag>[A-Za-z0-9._-]+)$")


def strict(schema):
    """A copy of an OpenAPI v3 schema in which objects accept only the fields they list."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if ("properties" in schema and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def load_crd_schemas(crd_dir):
    schemas = {}
    for name in sorted(os.listdir(crd_dir)):
        path = os.path.join(crd_dir, name)
        if name.endswith((".yaml.xz", ".yml.xz")):
            opener = lzma.open
        elif name.endswith((".yaml", ".yml")):
            opener = open
        else:
            continue
        with opener(path, "rt", encoding="utf-8") as f:
            crd = yaml.load(f, Loader=SAFE_LOADER)
        if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
            continue
        group = crd["spec"]["group"]
        kind = crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            schemas[(f"{group}/{version['name']}", kind)] = strict(schema)
    return schemas


def project_version(cmake_file):
    with open(cmake_file) as f:
        m = re.search(r"project\(\s*tutti\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise SystemExit(f"k8s_validate: no `project(tutti VERSION ...)` in {cmake_file}")
    return m.group(1)


def load_images(docker_dir):
    """The images docker/Dockerfile builds: each target with an ARG TUTTI_IMAGE_PROVIDES list, that
    list, and the text of the stages it is made of without it."""
    path = os.path.join(docker_dir, "Dockerfile")
    images = {}
    for name, (_, stage_text) in stages(path).items():
        text = target_text(path, name)
        m = re.search(r'^ARG TUTTI_IMAGE_PROVIDES="([^"]*)"', stage_text, re.M)
        if m:
            images[name] = {"provides": set(m.group(1).split()), "rest": text.replace(m.group(0), ""),
                            "file": f"the {name} image"}
    return images


def known_env_names(root):
    """The TUTTI_* names of the runtime's env registry and the KUBEXEC_* names kubexec reads."""
    names = set()
    for rel, prefix in (("runtime/src/core/env.cc", "TUTTI_"), ("kubexec/config.cc", "KUBEXEC_")):
        with open(os.path.join(root, rel)) as f:
            names.update(re.findall(r'"(' + prefix + r'[A-Z0-9_]+)"', f.read()))
    return names


def containers_of(pod_spec):
    if not isinstance(pod_spec, dict):
        return []
    return [c for key in ("initContainers", "containers") for c in pod_spec.get(key) or []
            if isinstance(c, dict)]


def mounts_of(container):
    return [m.get("mountPath", "") for m in container.get("volumeMounts") or [] if isinstance(m, dict)]


def path_tokens(words):
    """Absolute paths among command words (also the value of --opt=/path)."""
    for w in words:
        w = str(w)
        if w.startswith("--") and "=" in w:
            w = w.split("=", 1)[1]
        if w.startswith("/"):
            yield w


class Checker:
    def __init__(self, args):
        self.schemas = load_crd_schemas(args.crds)
        self.version = project_version(args.cmake)
        self.images = load_images(args.docker)
        self.installed = args.installed
        self.env_names = known_env_names(args.source)
        self.source = args.source
        self.errors = []
        self.checked_images = set()

    def error(self, where, message):
        self.errors.append(f"{where}: {message}")

    # -- schemas -----------------------------------------------------------------------------
    def check_schema(self, where, doc):
        key = (doc.get("apiVersion"), doc.get("kind"))
        schema = self.schemas.get(key) or k8s_core_schemas.SCHEMAS.get(key)
        if schema is None:
            known = sorted(f"{k} {v}" for v, k in list(self.schemas) + list(k8s_core_schemas.SCHEMAS))
            self.error(where, f"unknown kind {key[1]!r} of apiVersion {key[0]!r} (known: {', '.join(known)})")
            return False
        validator = jsonschema.Draft7Validator(schema)
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            path = ".".join(str(p) for p in e.absolute_path) or "(document)"
            self.error(where, f"{path}: {e.message}")
        meta = doc.get("metadata") or {}
        errors = jsonschema.Draft7Validator(k8s_core_schemas.METADATA).iter_errors(meta)
        for e in errors:
            self.error(where, f"metadata.{'.'.join(str(p) for p in e.absolute_path)}: {e.message}")
        return True

    # -- images and paths ----------------------------------------------------------------------
    def image_of(self, where, ref):
        m = IMAGE.match(str(ref or ""))
        if not m:
            self.error(where, f"image {ref!r} is not one of ours ([REGISTRY/]tutti-NAME:{self.version}, "
                              f"NAME one of {', '.join(sorted(self.images))})")
            return None
        name, tag = m.group("name"), m.group("tag")
        if name not in self.images:
            self.error(where, f"image {ref!r}: no target {name} of docker/Dockerfile builds tutti-{name}")
            return None
        if tag != self.version:
            self.error(where, f"image {ref!r}: `make image` tags tutti-{name}:{self.version}, not :{tag}")
            return None
        self.checked_images.add(name)
        return name

    def provided(self, image, path, mounts):
        if any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts if m):
            return True
        for p in self.images[image]["provides"]:
            if path == p or path.startswith(p.rstrip("/") + "/"):
                return True
        return False

    def copied_from_source(self, image, path):
        """For a path inside a directory the Dockerfile copies from the source tree
        (`cp -r /src/REL /staging/DIR`): whether the source tree has it. None when no copy step
        covers the path."""
        for rel, target in re.findall(r"cp -r /src/(\S+) /staging(/\S+)", self.images[image]["rest"]):
            target = target.rstrip("/")
            if path == target or path.startswith(target + "/"):
                return os.path.exists(os.path.join(self.source, rel, path[len(target):].lstrip("/")))
        return None

    def check_words(self, where, image, words, mounts, what):
        for path in path_tokens(words):
            if not self.provided(image, path, mounts):
                self.error(where, f"{what} names {path}, which {self.images[image]['file']} does not "
                                  f"produce (TUTTI_IMAGE_PROVIDES) and no volume mounts")
            elif self.copied_from_source(image, path) is False:
                self.error(where, f"{what} names {path}, which {self.images[image]['file']} copies from "
                                  f"the source tree, where it does not exist")

    def check_container(self, where, container, extra_mounts, worker_images, command=None):
        """command: (command, args, env) to check instead of the container's own (a TrainJob's)."""
        where = f"{where} container {container.get('name')!r}"
        image = self.image_of(where, container.get("image"))
        if image is None:
            return
        mounts = mounts_of(container) + extra_mounts
        cmd, args, env = command or (container.get("command") or [], container.get("args") or [],
                                     container.get("env") or [])
        words = [str(w) for w in list(cmd) + list(args)]
        rank_words = []
        if words and os.path.basename(words[0]) == "tuttirun" and "--" in words:
            cut = words.index("--")
            words, rank_words = words[:cut], words[cut + 1:]
        self.check_words(where, image, words, mounts, "the command")
        for e in env:
            name = str(e.get("name", "")) if isinstance(e, dict) else ""
            if name.startswith(("TUTTI_", "KUBEXEC_")) and name not in self.env_names:
                self.error(where, f"env {name} is not a variable tutti reads (runtime/src/core/env.cc, "
                                  f"kubexec/config.cc)")
        values = [e.get("value", "") for e in env if isinstance(e, dict)]
        self.check_words(where, image, values, mounts, "the env")
        for worker in worker_images:
            self.check_words(where, worker, rank_words, [], f"the rank command (in {worker}'s pods)")

    def worker_images(self, where, containers):
        found = []
        for c in containers:
            m = IMAGE.match(str(c.get("image") or ""))
            if m and m.group("name") in self.images and self.images[m.group("name")]["provides"] is not None:
                found.append(m.group("name"))
        return found

    def check_mpijob(self, where, doc):
        spec = doc.get("spec") or {}
        replicas = spec.get("mpiReplicaSpecs") or {}
        ssh = [spec.get("sshAuthMountPath", "/root/.ssh")]
        worker_pod = ((replicas.get("Worker") or {}).get("template") or {}).get("spec")
        workers = self.worker_images(where, containers_of(worker_pod))
        for role, replica in replicas.items():
            pod = (replica.get("template") or {}).get("spec")
            mounts = ssh + (["/etc/mpi"] if role == "Launcher" else [])
            for c in containers_of(pod):
                self.check_container(f"{where} {role}", c, mounts,
                                     workers if role == "Launcher" else [])

    def check_pytorchjob(self, where, doc):
        """training-operator v1.9: its webhook's and controller's rules, then every container."""
        name = str((doc.get("metadata") or {}).get("name", ""))
        if not DNS_1035.match(name) or len(name) > 63:
            self.error(where, f"metadata.name {name!r}: a PyTorchJob's name must be a DNS-1035 label "
                              f"(lowercase letter first)")
        spec = doc.get("spec") or {}
        nproc = spec.get("nprocPerNode")
        if nproc is not None and not (str(nproc) in ("auto", "cpu", "gpu") or str(nproc).isdigit()):
            self.error(where, f"spec.nprocPerNode {nproc!r}: torchrun takes a number, auto, cpu or gpu")
        replicas = spec.get("pytorchReplicaSpecs") or {}
        for role, replica in replicas.items():
            replica = replica or {}
            if role not in ("Master", "Worker"):
                self.error(where, f"pytorchReplicaSpecs.{role}: only Master and Worker replicas exist")
            count = replica.get("replicas", 1)
            if role == "Master" and count != 1:
                self.error(where, f"pytorchReplicaSpecs.Master.replicas: must be 1, not {count!r}")
            policy = replica.get("restartPolicy")
            if policy is not None and policy not in RESTART_POLICIES:
                self.error(where, f"pytorchReplicaSpecs.{role}.restartPolicy: {policy!r} is not one of "
                                  f"{', '.join(RESTART_POLICIES)}")
            containers = containers_of((replica.get("template") or {}).get("spec"))
            if not any(c.get("name") == "pytorch" for c in (replica.get("template") or {}).get(
                    "spec", {}).get("containers") or []):
                self.error(where, f"pytorchReplicaSpecs.{role}: no container named 'pytorch' (the "
                                  f"operator sets the env and port of that container)")
            for c in containers:
                self.check_container(f"{where} {role}", c, [], [])
        if "Master" not in replicas and spec.get("elasticPolicy") is None:
            self.error(where, "pytorchReplicaSpecs: no Master, and no elasticPolicy: nothing gives "
                              "torchrun a MASTER_ADDR")

    def runtime_parts(self, runtime):
        spec = runtime.get("spec") or {}
        ssh = [((spec.get("mlPolicy") or {}).get("mpi") or {}).get("sshAuthMountPath", "/root/.ssh")]
        jobs = ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
        parts = {}
        for job in jobs:
            pod = ((((job.get("template") or {}).get("spec") or {}).get("template")) or {}).get("spec")
            parts[job.get("name")] = containers_of(pod)
        return ssh, parts

    def check_runtime(self, where, doc):
        ssh, parts = self.runtime_parts(doc)
        workers = self.worker_images(where, parts.get("node", []))
        for name, containers in parts.items():
            mounts = ssh + (["/etc/mpi"] if name == "launcher" else [])
            for c in containers:
                self.check_container(f"{where} replicatedJob {name!r}", c, mounts,
                                     workers if name == "launcher" else [])

    def check_trainjob(self, where, doc, runtimes):
        spec = doc.get("spec") or {}
        name = (spec.get("runtimeRef") or {}).get("name")
        runtime = runtimes.get(name)
        trainer = spec.get("trainer") or {}
        if runtime is None:
            if trainer.get("command") or trainer.get("args"):
                self.error(where, f"runtimeRef {name!r}: no ClusterTrainingRuntime of that name among "
                                  f"the files checked, so the trainer's command cannot be checked")
            return
        ssh, parts = self.runtime_parts(runtime)
        workers = self.worker_images(where, parts.get("node", []))
        for c in parts.get("launcher", []):
            if c.get("name") != "node":
                continue
            c = dict(c)
            if trainer.get("image"):
                c["image"] = trainer["image"]
            command = (trainer.get("command") or c.get("command") or [],
                       trainer.get("args") or c.get("args") or [],
                       list(c.get("env") or []) + list(trainer.get("env") or []))
            self.check_container(f"{where} trainer (runtime {name!r} launcher)", c,
                                 ssh + ["/etc/mpi"], workers, command)

    def check_installed(self):
        """Every promised /usr/local path of an image in use comes out of cmake --install (or is
        made by a step of its Dockerfile that names it)."""
        if not self.installed:
            return
        for name in sorted(self.checked_images):
            image = self.images[name]
            for p in sorted(image["provides"]):
                if not p.startswith("/usr/local/"):
                    continue
                if os.path.exists(os.path.join(self.installed, p[len("/usr/local/"):])):
                    continue
                if re.search(r"/staging" + re.escape(p) + r"(?![\w.-])", image["rest"]):
                    continue
                if re.search(r"^COPY\s.*\s" + re.escape(p) + r"\s*$", image["rest"], re.M):
                    continue
                self.error(f"docker/Dockerfile ({image['file']})",
                           f"promises {p}, but `cmake --install` into {self.installed} does not make it "
                           f"and no step of the Dockerfile writes /staging{p} or copies it there")

    def run(self, files):
        docs = []
        for path in files:
            try:
                with open(path) as f:
                    loaded = list(yaml.safe_load_all(f))
            except (OSError, yaml.YAMLError) as e:
                self.error(path, f"cannot read: {e}")
                continue
            for i, doc in enumerate(loaded):
                if doc is None:
                    continue
                where = f"{path}: document {i + 1}"
                if not isinstance(doc, dict):
                    self.error(where, "not a mapping")
                    continue
                where += f" ({doc.get('kind')}/{(doc.get('metadata') or {}).get('name')})"
                if self.check_schema(where, doc):
                    docs.append((where, doc))
        runtimes = {d["metadata"]["name"]: d for _, d in docs
                    if d.get("kind") == "ClusterTrainingRuntime" and (d.get("metadata") or {}).get("name")}
        for where, doc in docs:
            kind = doc.get("kind")
            if kind == "MPIJob":
                self.check_mpijob(where, doc)
            elif kind == "ClusterTrainingRuntime":
                self.check_runtime(where, doc)
            elif kind == "TrainJob":
                self.check_trainjob(where, doc, runtimes)
            elif kind == "PyTorchJob":
                self.check_pytorchjob(where, doc)
        self.check_installed()
        return len(docs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crds", default=os.path.join(ROOT, "tests", "integration", "k8s", "crds"))
    parser.add_argument("--docker", default=os.path.join(ROOT, "docker"))
    parser.add_argument("--cmake", default=os.path.join(ROOT, "CMakeLists.txt"))
    parser.add_argument("--source", default=ROOT, help="the tutti source tree (env names)")
    parser.add_argument("--installed", help="a `cmake --install` prefix to check /usr/local paths against")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    checker = Checker(args)
    count = checker.run(args.files)
    for e in checker.errors:
        print(e)
    if checker.errors:
        print(f"k8s_validate: {len(checker.errors)} problem(s) in {len(args.files)} file(s)")
        return 1
    print(f"k8s_validate: {count} document(s) in {len(args.files)} file(s) valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
