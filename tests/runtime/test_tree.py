"""The reduction tree across workers (``laddu-dask.cluster.fan-in``): bitwise the flat fan-in's
results, at most fan-in calls from the client, and a child that fails under its parent costs
a retry, not the evaluation.

References: the same likelihood evaluated locally and with the flat fan-in (the tree must give
the same bits), and the counts of calls the client and each worker served.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.runtime.accumulate import CertifiedPartials
from laddu_dask.runtime.tree import plan_tree

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")


def _flatten(tree: dict) -> list[str]:
    return [a for addr, below in tree.items() for a in (addr, *_flatten(below))]


def _widest(tree: dict) -> int:
    return max([len(tree), *(_widest(below) for below in tree.values())]) if tree else 0


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 17, 64, 1000])
@pytest.mark.parametrize("fan_in", [2, 3, 8, 32])
def test_every_worker_once_and_at_most_fan_in_calls_per_caller(n, fan_in):
    addresses = [f"tcp://10.0.0.{i}:1" for i in range(n)]
    tree = plan_tree(addresses, fan_in)
    assert sorted(_flatten(tree)) == sorted(addresses)  # each worker called exactly once
    assert _widest(tree) <= fan_in
    assert plan_tree(addresses, fan_in) == tree  # deterministic
    if n <= fan_in:
        assert tree == {a: {} for a in addresses}  # flat: as before the tree


def test_a_fan_in_below_two_is_an_error():
    with pytest.raises(ValueError, match="fan-in must be at least 2"):
        plan_tree(["a"], 1)


def _likelihood(execution=None):
    rng = np.random.default_rng(3)
    x = ld.scalar("x")
    model = ld.Model((ld.complex(ld.parameter("a", initial=1.0), ld.parameter("b", initial=0.2)) * x
                      + ld.complex(x, 1.0)).norm_sqr())
    data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0.1, 1.0, 4000)}, chunk_size=500)
    mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0.0, 1.0, 8000)}, chunk_size=500)
    return ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc, name="tree")],
                         execution=execution or ld.Execution(normalization="general"))


POINTS = [[1.0, 0.2], [0.7, -0.4], [1.3, 0.5]]


@contextlib.contextmanager
def _binary_tree(n: int):
    """``n`` in-process workers called as a tree of fan-in 2: the cluster, its client, the
    likelihood on it and the workers' addresses (sorted, as the tree is planned)."""
    with distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=False,
                                  dashboard_address=None, silence_logs=50) as cluster, \
            distributed.Client(cluster) as client, dask.config.set({"laddu-dask.cluster.fan-in": 2}):
        yield (cluster, client, _likelihood(ld.Execution(client=client, normalization="general")),
               sorted(client.scheduler_info()["workers"]))


@pytest.mark.timeout(300)
def test_the_tree_gives_the_flat_fan_ins_bits_with_fewer_calls_and_survives_a_failing_child():
    local = [_likelihood().value_and_gradient(p) for p in POINTS]
    with distributed.LocalCluster(n_workers=4, threads_per_worker=1, processes=False,
                                  dashboard_address=None, silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        lik = _likelihood(ld.Execution(client=client, normalization="general"))
        runner = lik.execution.runner
        got = {}
        for fan_in in (16, 3, 2):  # flat; one leader with a child and two alone; two pairs
            with dask.config.set({"laddu-dask.cluster.fan-in": fan_in}):
                before = runner.calls
                got[fan_in] = [lik.value_and_gradient(p) for p in POINTS]
                assert runner.calls - before == len(POINTS) * min(fan_in, 4)  # calls from the client
        for fan_in, results in got.items():
            for (v, g), (lv, lg) in zip(results, local, strict=True):
                assert v == lv and g.tobytes() == lg.tobytes(), fan_in
        # a child fails under its parent, then a parent fails with its child below (as a broken
        # connection would): reported lost, every partition of the subtree asked for again,
        # the evaluation's numbers unchanged
        addresses = sorted(client.scheduler_info()["workers"])  # fan-in 2: {0: {1}, 2: {3}}
        for which in (3, 2):
            worker = next(w for w in cluster.workers.values() if w.address == addresses[which])
            handler = worker.handlers["laddu_reduce"]
            failures = []

            async def broken(request, handler=handler, failures=failures):
                if not failures:
                    failures.append(request["layout"])
                    raise OSError("simulated broken connection")
                return await handler(request=request)

            worker.handlers["laddu_reduce"] = broken
            try:
                with dask.config.set({"laddu-dask.cluster.fan-in": 2}):
                    again = lik.value_and_gradient(POINTS[1])
            finally:
                worker.handlers["laddu_reduce"] = handler
            assert failures and again[0] == local[1][0] and again[1].tobytes() == local[1][1].tobytes()
        with dask.config.set({"laddu-dask.cluster.fan-in": 1}), \
                pytest.raises(ld.ParameterError, match=r"laddu-dask.cluster.fan-in must be an integer >= 2"):
            lik.value(POINTS[0])


@pytest.mark.timeout(300)
def test_after_the_first_evaluation_a_call_names_its_route_and_a_reply_lists_only_anomalies():
    """Past the first evaluation of a placement the client's requests carry no subtree (each
    relay builds its children's requests from its cached route) and each reply to the client
    lists no member (complete members are only counted): the client's work does not grow
    with the workers below. A relay that lost its objects (a restart) costs a round, not the
    numbers, and the next evaluation names routes again."""
    local = [_likelihood().value_and_gradient(p) for p in POINTS]
    with _binary_tree(7) as (cluster, client, lik, addresses):
        tree = plan_tree(addresses, 2)  # three levels: 0 -> 1 -> 2, 0 -> 3; 4 -> 5, 4 -> 6
        assert tree[addresses[0]] == {addresses[1]: {addresses[2]: {}}, addresses[3]: {}}
        first = lik.value_and_gradient(POINTS[0])  # prepares, and sends the subtrees and routes
        assert first[0] == local[0][0] and first[1].tobytes() == local[0][1].tobytes()
        seen = []  # (worker, request keys, reply) of every call, top or forwarded
        workers = {w.address: w for w in cluster.workers.values()}
        for addr, worker in workers.items():
            handler = worker.handlers["laddu_reduce"]

            async def recording(request, handler=handler, addr=addr):
                reply = await handler(request=request)
                seen.append((addr, set(request), reply))
                return reply

            worker.handlers["laddu_reduce"] = recording
        runner = lik.execution.runner
        for p, (lv, lg) in zip(POINTS, local, strict=True):
            seen.clear()
            before = runner.calls
            v, g = lik.value_and_gradient(p)
            assert v == lv and g.tobytes() == lg.tobytes()
            assert runner.calls - before == 2
            assert sorted(a for a, _, _ in seen) == addresses  # each worker once
            assert not any("children" in keys for _, keys, _ in seen)
            relays = {a for a, keys, _ in seen if "route" in keys}
            assert relays == {addresses[i] for i in (0, 1, 4)}
            tops = [next(r for a, _, r in seen if a == addresses[i]) for i in (0, 4)]
            assert [(r["members"], r["complete"]) for r in tops] == [({}, 4), ({}, 3)]
            assert sum(r["partitions"] for r in tops) == 8 + 16  # every partition of data and MC, once
            # a subtree's sums travel as short exact expansions, however many partitions it merged
            widths = [w for r in tops for shape in r["shapes"] if shape for _, w in shape]
            assert widths and max(widths) <= CertifiedPartials.MAX_EXPANSION
        # the middle relay restarts: it lacks its route and layout, says so, and its subtree is
        # asked again without routes; the numbers do not change
        plugin = workers[addresses[1]].plugins["laddu-dask"]
        plugin.objects.clear()
        seen.clear()
        v, g = lik.value_and_gradient(POINTS[1])
        assert v == local[1][0] and g.tobytes() == local[1][1].tobytes()
        assert any(a == addresses[1] and "need" in r for a, _, r in seen)
        seen.clear()
        v, g = lik.value_and_gradient(POINTS[2])  # its objects and a new route were sent again
        assert v == local[2][0] and g.tobytes() == local[2][1].tobytes()
        v, g = lik.value_and_gradient(POINTS[2])
        assert not any("need" in r for _, _, r in seen)
        seen.clear()
        v, g = lik.value_and_gradient(POINTS[0])
        assert v == local[0][0] and g.tobytes() == local[0][1].tobytes()
        assert not any("children" in keys for _, keys, _ in seen)
        assert {a for a, keys, _ in seen if "route" in keys} == {addresses[i] for i in (0, 1, 4)}
        with dask.config.set({"laddu-dask.cluster.fan-in": 3}):  # another tree: subtrees sent once
            for again in (True, False):
                seen.clear()
                v, g = lik.value_and_gradient(POINTS[1])
                assert v == local[1][0] and g.tobytes() == local[1][1].tobytes()
                assert any("children" in keys for _, keys, _ in seen) is again


@pytest.mark.timeout(300)
def test_a_tree_calls_through_laddu_dasks_own_connections_and_a_relay_forwards_before_its_share():
    """The client's direct calls and a relay's calls to its children go through laddu-dask's own
    connection pools, whose both ends skip distributed's offload sizing (the workers' ends of
    every other connection keep it); a relay's children have their requests before the relay
    reduces its own share; the numbers stay the local bits."""
    local = [_likelihood().value_and_gradient(p) for p in POINTS]
    with _binary_tree(3) as (cluster, client, lik, addresses):
        tree = plan_tree(addresses, 2)
        relay, child = next((a, next(iter(below))) for a, below in tree.items() if below)
        for p in POINTS[:2]:  # prepares, then names routes over open connections
            lik.value_and_gradient(p)
        workers = {w.address: w for w in cluster.workers.values()}
        plugin = workers[relay].plugins["laddu-dask"]
        in_flight = []
        own = plugin._reduce_own

        async def recording(request, own=own):
            in_flight.append(len(plugin.children.occupied[child]))
            return await own(request)

        plugin._reduce_own = recording
        try:
            v, g = lik.value_and_gradient(POINTS[2])
        finally:
            del plugin._reduce_own
        assert v == local[2][0] and g.tobytes() == local[2][1].tobytes()
        assert in_flight == [1]  # the child's call had left when the relay's own share began

        def comms(pool):
            return [c for cs in (*pool.available.values(), *pool.occupied.values()) for c in cs]

        ours = [c for _, pool in lik.execution.runner.direct._opened for c in comms(pool)]
        ours += comms(plugin.children)
        assert ours and not any(c.allow_offload for c in ours)
        own_ends = {c.local_address for c in ours}
        ends = [(c.peer_address in own_ends, c.allow_offload) for w in workers.values() for c in w._comms]
        assert sum(mine for mine, _ in ends) == len(ours)  # every worker's end of our connections
        assert all(allow is not mine for mine, allow in ends)  # and only those skip the sizing
        with dask.config.set({"laddu-dask.cluster.direct-calls": False}):  # through client.rpc
            v, g = lik.value_and_gradient(POINTS[0])
        assert v == local[0][0] and g.tobytes() == local[0][1].tobytes()
        theirs = {c.local_address for c in comms(client.rpc)}
        assert theirs and all(c.allow_offload for w in workers.values() for c in w._comms
                              if c.peer_address in theirs)
