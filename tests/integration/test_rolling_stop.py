"""RollingUpdate's stop (docs/api.md#rolling-update): a new template whose
members are not Ready past the readiness grace period stops the roll, and
the pool's Progressing condition says so; a template change lifts it.

The controller runs with a 5 s grace period (`exclusive_controller`), so
this module does not share the extensions controller of test_extensions.py.
"""
import time

from conftest import install_extension_crds, wait_for
from test_extensions import (IMAGE, NO_KUBELET_NODE, POOL, TEMPLATE, cond, create_all, is_ready,
                             members, podspec, rolling_pool, template, wait_members, wait_obj)


def test_a_template_stuck_past_the_grace_period_stops_the_roll_and_says_so(kube, exclusive_controller, ns):
    install_extension_crds(kube)
    exclusive_controller(["--extensions", "--sandbox-warm-pool-readiness-grace-period=5s"],
                         name="rolling-stop").wait_leading()
    create_all(kube, ns, template("tpl", spec=podspec(env=[{"name": "VERSION", "value": "1"}])),
               rolling_pool("pool", "tpl", 3, 1, 1))
    old = wait_members(kube, ns, "pool", 3, is_ready)
    old_names = {s["metadata"]["name"] for s in old}
    # members of the new template never run: bound to a node no kubelet serves
    kube.patch(TEMPLATE, "tpl", ns, {"spec": {"podTemplate": {"spec": {
        "nodeName": NO_KUBELET_NODE, "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "main", "image": IMAGE, "env": [{"name": "VERSION", "value": "2"}]}]}}}})

    p = wait_obj(kube, POOL, "pool", ns,
                 lambda p: (cond(p, "Progressing") or ("",))[0] == "False", "Progressing False", timeout=90)
    assert cond(p, "Progressing")[1] == "NewMembersNotReady", cond(p, "Progressing")
    # stopped: with maxUnavailable 1 the roll could have taken one old member;
    # it keeps at least replicas - maxUnavailable of them, and surges no more
    time.sleep(8)   # beyond another grace period: passes ran, nothing moved on
    ms = members(kube, ns, "pool")
    kept = [s for s in ms if s["metadata"]["name"] in old_names]
    new = [s for s in ms if s["metadata"]["name"] not in old_names]
    assert len(kept) >= 2 and all(is_ready(s) for s in kept), [s["metadata"]["name"] for s in ms]
    assert len(new) <= 2 and not any(is_ready(s) for s in new)

    # a template that runs lifts the stop: the pool rolls to it
    kube.patch(TEMPLATE, "tpl", ns, {"spec": {"podTemplate": {"spec": {
        "nodeName": None, "containers": [{"name": "main", "image": IMAGE,
                                           "env": [{"name": "VERSION", "value": "3"}]}]}}}})
    p = wait_obj(kube, POOL, "pool", ns, lambda p: (cond(p, "Progressing") or ("", ""))[1] == "UpdateComplete",
                 "UpdateComplete", timeout=120)
    ms = wait_members(kube, ns, "pool", 3, is_ready)
    assert not {s["metadata"]["name"] for s in ms} & old_names
