"""Reads the embedded cluster with Kubernetes clients spotboard did not write: the official
Python client (`kubernetes` on PyPI) and kr8s. Prints one JSON object of what each saw; the
Rust test (server/tests/embedded_kubectl.rs) runs this and checks it.

Usage: foreign_clients.py KUBECONFIG
"""

import json
import sys


def official(kubeconfig):
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=kubeconfig)
    version = client.VersionApi(api).get_code()
    groups = client.ApisApi(api).get_api_versions()
    nodes = client.CoreV1Api(api).list_node()
    pools = client.CustomObjectsApi(api).list_cluster_custom_object(
        "compute.coreweave.com", "v1alpha1", "nodepools"
    )
    return {
        "git_version": version.git_version,
        "groups": sorted(g.name for g in groups.groups),
        "nodes": sorted(n.metadata.name for n in nodes.items),
        "nodepools": sorted(p["metadata"]["name"] for p in pools["items"]),
    }


def kr8s_client(kubeconfig):
    import kr8s

    api = kr8s.api(kubeconfig=kubeconfig)
    version = api.version()
    nodes = api.get("nodes")
    pools = api.get("nodepools.compute.coreweave.com")
    return {
        "git_version": version["gitVersion"],
        "nodes": sorted(n.name for n in nodes),
        "nodepools": sorted(p.name for p in pools),
    }


def main():
    kubeconfig = sys.argv[1]
    out = {}
    for name, read in (("kubernetes", official), ("kr8s", kr8s_client)):
        try:
            out[name] = read(kubeconfig)
        except Exception as e:  # the test prints what failed, with its type
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
