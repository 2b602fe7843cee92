"""The deployment's promises, checked on one rendered overlay (called by validate.sh).

Every container runs as a non-root user with CPU and memory limits and no privilege escalation;
every probe container has a gRPC readiness probe; the probes are one StatefulSet whose pods get
stable names from a rendered headless Service, and a StatefulSet of several replicas is exactly
the list of a region's `replicas` in the rendered spec (each pod's name, in order); a NetworkPolicy isolates the probe pods and
admits only the coordinator (its pods, or an address block); every Secret and ConfigMap a pod
refers to is part of the rendering; the coordinator, where present, is a Job writing to a
PersistentVolumeClaim, and a scheduled one (CronJob) never overlaps or retries. Exits 1 naming the overlay, object and rule on the first failures.
"""

import sys

import yaml

PROBE = "openbench-probe"


def containers(obj):
    template = obj["spec"]["jobTemplate"]["spec"]["template"] if obj["kind"] == "CronJob" else obj["spec"]["template"]
    spec = template["spec"]
    return spec, spec.get("containers", [])


def replica_problems(sts, objects):
    """The StatefulSet's headless Service is rendered, and with several replicas the spec lists
    every pod's stable name as its region's `replicas`, in order, and nothing else."""
    problems = []
    service = sts["spec"].get("serviceName")
    headless = [
        o for o in objects
        if o["kind"] == "Service" and o["metadata"]["name"] == service
        and o["spec"].get("clusterIP") == "None"
    ]
    if not headless:
        problems.append(f"StatefulSet {PROBE}: serviceName {service!r} is not a rendered headless Service")
        return problems
    replicas = sts["spec"].get("replicas", 1)
    if replicas <= 1:
        return problems
    namespace = sts["metadata"].get("namespace", "default")
    pods = [f"https://{PROBE}-{k}.{service}.{namespace}.svc.cluster.local:7070" for k in range(replicas)]
    env = sts["spec"]["template"]["spec"]["containers"][0].get("env", [])
    region = next((e.get("value") for e in env if e["name"] == "OPENBENCH_REGION"), None)
    specs = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "openbench-spec"]
    listed = None
    for spec in specs:
        for r in yaml.safe_load(spec["data"]["spec.yaml"]).get("regions", []):
            if r.get("name") == region:
                listed = r.get("replicas")
    if listed != pods:
        problems.append(
            f"StatefulSet {PROBE}: {replicas} replicas of region {region}, but the spec's "
            f"regions[].replicas is {listed} (expected {pods})"
        )
    return problems


def main(region, path):
    with open(path, encoding="utf-8") as f:
        objects = [o for o in yaml.safe_load_all(f) if o]
    problems = []
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    workloads = [o for o in objects if o["kind"] in ("StatefulSet", "Job", "CronJob")]
    for obj in workloads:
        where = f'{obj["kind"]} {obj["metadata"]["name"]}'
        pod, cs = containers(obj)
        pod_ctx = pod.get("securityContext", {})
        for c in cs:
            ctx = c.get("securityContext", {})
            limits = c.get("resources", {}).get("limits", {})
            if not (pod_ctx.get("runAsNonRoot") or ctx.get("runAsNonRoot")):
                problems.append(f"{where}/{c['name']}: not runAsNonRoot")
            if ctx.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}/{c['name']}: allowPrivilegeEscalation is not false")
            if "cpu" not in limits or "memory" not in limits:
                problems.append(f"{where}/{c['name']}: no cpu and memory limits")
            if obj["kind"] == "StatefulSet" and "grpc" not in c.get("readinessProbe", {}):
                problems.append(f"{where}/{c['name']}: no gRPC readiness probe")
            refs = [("Secret", e["secretRef"]["name"]) for e in c.get("envFrom", []) if "secretRef" in e]
            refs += [
                ("Secret", e["valueFrom"]["secretKeyRef"]["name"])
                for e in c.get("env", [])
                if "secretKeyRef" in e.get("valueFrom", {})
            ]
            refs += [
                ("ConfigMap", e["valueFrom"]["configMapKeyRef"]["name"])
                for e in c.get("env", [])
                if "configMapKeyRef" in e.get("valueFrom", {})
            ]
            for kind, name in refs:
                if (kind, name) not in names:
                    problems.append(f"{where}/{c['name']}: refers to {kind} {name}, not rendered")
        for v in pod.get("volumes", []):
            for kind, key, field in (("Secret", "secret", "secretName"), ("ConfigMap", "configMap", "name")):
                if key in v and (kind, v[key][field]) not in names:
                    problems.append(f"{where}: volume {v['name']} refers to {kind} {v[key][field]}, not rendered")
            claim = v.get("persistentVolumeClaim", {}).get("claimName")
            if claim and ("PersistentVolumeClaim", claim) not in names:
                problems.append(f"{where}: volume {v['name']} refers to PVC {claim}, not rendered")
    probes = [o for o in objects if o["kind"] == "StatefulSet" and o["metadata"]["name"] == PROBE]
    if len(probes) != 1:
        problems.append(f"expected exactly one {PROBE} StatefulSet")
    for sts in probes:
        problems += replica_problems(sts, objects)
    policies = [
        o for o in objects
        if o["kind"] == "NetworkPolicy"
        and o["spec"]["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/name") == "openbench-probe"
    ]
    if not policies:
        problems.append("no NetworkPolicy selects the probe pods")
    for policy in policies:
        for rule in policy["spec"].get("ingress", []):
            for peer in rule.get("from", []) or [{}]:
                coordinator = peer.get("podSelector", {}).get("matchLabels", {}).get(
                    "app.kubernetes.io/name"
                ) == "openbench-coordinator"
                if not coordinator and "ipBlock" not in peer:
                    problems.append(f"NetworkPolicy {policy['metadata']['name']}: admits {peer or 'everyone'}")
    jobs = [o for o in objects if o["kind"] in ("Job", "CronJob")]
    for job in jobs:
        pod, _ = containers(job)
        if not any("persistentVolumeClaim" in v for v in pod.get("volumes", [])):
            problems.append(f"{job['kind']} {job['metadata']['name']}: writes to no PersistentVolumeClaim")
    for cron in (o for o in objects if o["kind"] == "CronJob"):
        if cron["spec"].get("concurrencyPolicy") != "Forbid":
            problems.append(f"CronJob {cron['metadata']['name']}: runs may overlap (concurrencyPolicy is not Forbid)")
        if cron["spec"]["jobTemplate"]["spec"].get("backoffLimit") != 0:
            problems.append(f"CronJob {cron['metadata']['name']}: a retry would start a second run (backoffLimit is not 0)")
    for p in problems:
        print(f"validate: {region}: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
