#!/usr/bin/env python3
"""Take docs/dashboard.png and docs/dashboard_fit.png: Dask's dashboard and its laddu-dask
page after real fits of the KsKs sample.

Starts a two-process ``LocalCluster`` with its dashboard on 127.0.0.1, writes the KsKs
sample (``laddu_dask.datasets.ksks.write_sample``), fits it with MIGRAD from ``--restarts``
distinct starts (the displaced start, then draws around it: masses within 3 %, the other
parameters within 25 %), one after another, then captures the dashboard's ``/status`` page
and laddu-dask's ``/laddu-dask`` page with headless Chromium (after the fits, so that the
browser's rendering does not slow them on a small machine and the Task Stream holds still
under the mouse that shows one rectangle's name).

The evaluations report themselves (:mod:`laddu_dask.runtime.dashboard`): nothing here but
an ordinary fit on a cluster.

Usage: ``python3 docs/dashboard_screenshot.py [--out docs/dashboard.png]
[--fit-out docs/dashboard_fit.png]`` (needs bokeh and
Chromium: ``apt-get install -y chromium``; run as root, Chromium then needs --no-sandbox).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

LABEL = "ksks"  # the term's name: the Task Stream shows laddu-dask-ksks


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    raise SystemExit("no Chromium found (apt-get install -y chromium)")


def _find_colour(png: bytes, colour: str | None) -> tuple[int, int] | None:
    """A pixel of ``png`` inside a patch of ``colour`` at least 3 pixels wide, near the middle."""
    import io

    import numpy as np
    from PIL import Image

    if colour is None:
        return None
    rgb = np.array([int(colour.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4)])
    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    match = np.abs(image - rgb).sum(axis=2) < 20
    wide = match.copy()
    for shift in (-1, 1):
        wide &= np.roll(match, shift, axis=1)
    ys, xs = np.nonzero(wide)
    if not len(xs):
        return None
    i = np.argmin(np.abs(xs - np.median(xs)) + np.abs(ys - np.median(ys)))
    return int(xs[i]), int(ys[i])


async def _capture(url: str, out: str, size: tuple[int, int], wait: float, hover: str | None) -> None:
    """Open ``url`` in headless Chromium, let the Bokeh pages draw for ``wait`` s, save a PNG.

    Through the DevTools protocol, since ``--screenshot`` fires before Bokeh's websocket
    session has drawn anything; with the mouse over a rectangle of colour ``hover``, so that
    the Task Stream's tooltip shows its name.
    """
    from tornado.websocket import websocket_connect

    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
               f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
               "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank"]
        browser = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        try:
            for line in browser.stderr:
                if "DevTools listening on" in line:
                    port = line.rsplit(":", 1)[1].split("/")[0]
                    break
            else:
                raise SystemExit("Chromium did not start its DevTools endpoint")
            targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=30))
            page = next(t for t in targets if t["type"] == "page")
            conn = await websocket_connect(page["webSocketDebuggerUrl"], max_message_size=2**28)
            ids = itertools.count(1)

            async def call(method: str, **params) -> dict:
                n = next(ids)
                await conn.write_message(json.dumps({"id": n, "method": method, "params": params}))
                while True:
                    msg = json.loads(await asyncio.wait_for(conn.read_message(), 60))
                    if msg.get("id") == n:
                        return msg.get("result", {})

            await call("Emulation.setDeviceMetricsOverride", width=size[0], height=size[1],
                       deviceScaleFactor=1, mobile=False)
            await call("Page.navigate", url=url)
            await asyncio.sleep(wait)
            shot = base64.b64decode((await call("Page.captureScreenshot", format="png"))["data"])
            if (point := _find_colour(shot, hover)) is not None:  # show a rectangle's name
                for dx in (-40, -10, 0):  # in from the left, as a mouse comes
                    await call("Input.dispatchMouseEvent", type="mouseMoved", x=point[0] + dx, y=point[1])
                    await asyncio.sleep(0.2)
                shot = base64.b64decode((await call("Page.captureScreenshot", format="png"))["data"])
            with open(out, "wb") as f:
                f.write(shot)
        finally:
            browser.terminate()
            browser.wait(30)


def screenshot(url: str, out: str, size: tuple[int, int] = (1400, 900), wait: float = 8.0,
               hover: str | None = None) -> None:
    """Render ``url`` (a dashboard page) with headless Chromium into the PNG ``out``.

    ``hover``: the mouse rests on a rectangle of this colour (``#rrggbb``) when it is taken.
    """
    asyncio.run(_capture(url, out, size, wait, hover))


def _shrink(path: str) -> None:
    """Re-encode the PNG with a 256-colour palette (a dashboard has few colours)."""
    from PIL import Image

    Image.open(path).convert("RGB").quantize(colors=256).save(path, optimize=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "dashboard.png"))
    ap.add_argument("--fit-out", default=os.path.join(here, "dashboard_fit.png"),
                    help="the laddu-dask page's screenshot")
    ap.add_argument("--data", type=int, default=100_000)
    ap.add_argument("--mc", type=int, default=1_000_000)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--restarts", type=int, default=5, help="fits (distinct starts) before the capture")
    args = ap.parse_args(argv)

    import numpy as np
    from distributed import Client, LocalCluster
    from distributed.diagnostics.progress_stream import color_of

    import laddu_dask as ld
    from laddu_dask import ksks
    from laddu_dask.runtime.dashboard import task_name

    with tempfile.TemporaryDirectory() as folder, \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                         silence_logs=50) as cluster, Client(cluster) as client:
        paths = ksks.write_sample(folder, n_data=args.data, n_mc=args.mc, seed=7, parts=args.parts)
        execution = ld.Execution(client=client, memory=ld.MemoryPlan(host="2 GiB"))
        lik = ld.Likelihood([ld.NLL(ksks.model(), data=ld.read_parquet(paths["data"]),
                                    accepted_mc=ld.read_parquet(paths["accmc"]), name="ksks")],
                            execution=execution)
        lik.value(ksks.displaced_start())  # prepare the partitions on the workers
        # fits from distinct starts (the displaced one, then draws around it: the KsKs
        # parameters have no starting ranges for fit_restarts to sample), one after another:
        # the page's -2 ln L shows each descent
        rng = np.random.default_rng(3)
        fits = []
        for k in range(args.restarts):
            start = {name: value * (1.0 + (0.0 if k == 0 else rng.uniform(-1, 1))
                                    * (0.03 if name.endswith("_mass") else 0.25))
                     for name, value in ksks.displaced_start().items()}
            fits.append(lik.fit(initial=start, method="migrad"))
        time.sleep(1.0)  # the last notes reach the scheduler; then the page is drawn, still
        url = f"http://127.0.0.1:{cluster.scheduler.http_server.port}/status"
        screenshot(url, args.out, hover=color_of(task_name(LABEL)))  # the Task Stream's colour of it
        _shrink(args.out)
        page = url.replace("/status", "/laddu-dask")
        screenshot(page, args.fit_out, size=(1400, 1100))
        _shrink(args.fit_out)
        print(f"{args.fit_out}: {os.path.getsize(args.fit_out) / 1024:.0f} KiB from {page}")
        print(f"{args.out}: {os.path.getsize(args.out) / 1024:.0f} KiB from {url}; "
              f"{len(fits)} fits, {sum(f.n_calls for f in fits)} evaluations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
