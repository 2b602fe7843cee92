"""The deployment's promises, checked on one rendered overlay (called by validate.sh).

Every container runs as a non-root user with CPU and memory limits and no privilege escalation;
every probe container has a gRPC readiness probe; a NetworkPolicy isolates the probe pods and
admits only the coordinator (its pods, or an address block); every Secret and ConfigMap a pod
refers to is part of the rendering; the coordinator, where present, is a Job writing to a
PersistentVolumeClaim, and a scheduled one (CronJob) never overlaps or retries. Exits 1 naming the overlay, object and rule on the first failures.
"""

import sys

import yaml


def containers(obj):
    template = obj["spec"]["jobTemplate"]["spec"]["template"] if obj["kind"] == "CronJob" else obj["spec"]["template"]
    spec = template["spec"]
    return spec, spec.get("containers", [])


def main(region, path):
    with open(path, encoding="utf-8") as f:
        objects = [o for o in yaml.safe_load_all(f) if o]
    problems = []
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    workloads = [o for o in objects if o["kind"] in ("Deployment", "Job", "CronJob")]
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
            if obj["kind"] == "Deployment" and "grpc" not in c.get("readinessProbe", {}):
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
    probes = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "openbench-probe"]
    if len(probes) != 1:
        problems.append("expected exactly one openbench-probe Deployment")
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
