"""Structural JSON schemas for the core Kubernetes kinds examples/k8s uses, and for metadata.

These are not the API server's full OpenAPI documents (none is available offline): they list the
fields of each kind that exist (so a misspelt field is an error), the required ones, and the
enumerations a typo would break (verbs, access modes, subject kinds). Written from the Kubernetes
API reference for core/v1 and rbac.authorization.k8s.io/v1.
"""

DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
QUANTITY = r"^[0-9]+(\.[0-9]+)?([KMGTPE]i?|m|k|e[0-9]+)?$"

STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
STRINGS = {"type": "array", "items": {"type": "string"}}

METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {
        # Job names become pod and host names (<job>-worker-0.<job>.<ns>.svc): DNS labels.
        "name": {"type": "string", "maxLength": 63, "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
        "namespace": {"type": "string", "maxLength": 63, "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
        "labels": STRING_MAP,
        "annotations": STRING_MAP,
    },
    "additionalProperties": False,
}


def kind_schema(api_version, kind, spec=None, required=(), **fields):
    properties = {
        "apiVersion": {"const": api_version},
        "kind": {"const": kind},
        "metadata": {"type": "object"},
    }
    if spec is not None:
        properties["spec"] = spec
    properties.update(fields)
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", *required],
        "properties": properties,
        "additionalProperties": False,
    }


def closed(properties, required=()):
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


VERBS = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "*",
         "impersonate", "bind", "escalate", "use", "approve", "sign"]

POLICY_RULE = closed({
    "apiGroups": STRINGS,
    "resources": STRINGS,
    "resourceNames": STRINGS,
    "nonResourceURLs": STRINGS,
    "verbs": {"type": "array", "minItems": 1, "items": {"enum": VERBS}},
}, required=["verbs"])

SUBJECT = closed({
    "kind": {"enum": ["ServiceAccount", "User", "Group"]},
    "name": {"type": "string", "minLength": 1},
    "namespace": {"type": "string"},
    "apiGroup": {"type": "string"},
}, required=["kind", "name"])

ROLE_REF = closed({
    "apiGroup": {"const": "rbac.authorization.k8s.io"},
    "kind": {"enum": ["Role", "ClusterRole"]},
    "name": {"type": "string", "minLength": 1},
}, required=["apiGroup", "kind", "name"])

RESOURCES = closed({
    "requests": {"type": "object", "additionalProperties": {"type": "string", "pattern": QUANTITY}},
    "limits": {"type": "object", "additionalProperties": {"type": "string", "pattern": QUANTITY}},
})

PVC_SPEC = closed({
    "accessModes": {"type": "array", "minItems": 1,
                    "items": {"enum": ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]}},
    "resources": RESOURCES,
    "storageClassName": {"type": "string"},
    "volumeMode": {"enum": ["Filesystem", "Block"]},
    "volumeName": {"type": "string"},
    "selector": {"type": "object"},
    "dataSource": {"type": "object"},
    "dataSourceRef": {"type": "object"},
    "volumeAttributesClassName": {"type": "string"},
}, required=["accessModes", "resources"])

SCHEMAS = {
    ("v1", "ServiceAccount"): kind_schema(
        "v1", "ServiceAccount",
        automountServiceAccountToken={"type": "boolean"},
        secrets={"type": "array", "items": {"type": "object"}},
        imagePullSecrets={"type": "array", "items": closed({"name": {"type": "string"}})}),
    ("rbac.authorization.k8s.io/v1", "Role"): kind_schema(
        "rbac.authorization.k8s.io/v1", "Role", rules={"type": "array", "items": POLICY_RULE}),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): kind_schema(
        "rbac.authorization.k8s.io/v1", "RoleBinding", required=["roleRef"],
        subjects={"type": "array", "items": SUBJECT}, roleRef=ROLE_REF),
    ("v1", "PersistentVolumeClaim"): kind_schema("v1", "PersistentVolumeClaim", spec=PVC_SPEC,
                                                 required=["spec"]),
}
