"""The live page as headless Chromium renders it: ``make live-check`` only (mark ``chromium``; not in make test).

``dpstream watch`` (seeded, so not deployable) reads a generated capture and pipes its releases into
``dpstream live -``; Chromium loads the page and runs its script (``--virtual-time-budget``), and the DOM it dumps
must hold the last release's labels, the not-deployable flag, the privacy statement and the epoch marks. Without
Chromium the tests fail: install it (``apt-get install -y chromium``).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import child_env
from test_live import WATCH_LINES, get, wait_for

from dpstream.data.synthetic_capture import pcap_bytes
from dpstream.live.server import LiveServer

pytestmark = pytest.mark.chromium

HEAVY = np.array([0xC0A80A05, 0x0A000017, 0xAC100203, 0x0A00002A], dtype=np.uint32)  # 192.168.10.5, 10.0.0.23, ...


def chromium() -> str:
    """The Chromium binary; the test fails (not skips) without one."""
    for name in ("chromium", "chromium-browser"):
        if found := shutil.which(name):
            return found
    pytest.fail("chromium is not installed: apt-get install -y chromium (make live-check renders the page in it)")


def render(url: str, *flags: str) -> str:
    """The DOM of ``url`` (its script left out) after the script ran for 4 s of virtual time (``--dump-dom``)."""
    done = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--virtual-time-budget=4000", *flags, "--dump-dom", url],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return re.sub(r"<script>.*?</script>", "", done.stdout, flags=re.S)  # what it rendered, not its source


def text_of(dom: str, element_id: str) -> tuple[str, str]:
    """(class, text) of the element with ``element_id`` in a dumped DOM."""
    found = re.search(rf'<(\w+) id="{element_id}"(?: class="([^"]*)")?>(.*?)</\1>', dom, flags=re.S)
    assert found, f"no element #{element_id} in the DOM"
    return found[2] or "", html.unescape(re.sub(r"<[^>]+>", " ", found[3])).strip()


def table_labels(dom: str) -> list[str]:
    """The item column of the top-k table, in its order."""
    body = re.search(r'<table id="top">.*?<tbody>(.*?)</tbody>', dom, flags=re.S)
    assert body
    return [html.unescape(label) for label in re.findall(r'<span class="swatch"[^>]*></span>([^<]+)</td>', body[1])]


def legend_labels(dom: str) -> list[str]:
    legend = re.search(r'<g class="legend">(.*?)</g>', dom, flags=re.S)
    assert legend, "no chart legend"
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]+)</text>", legend[1])]


def largest(releases: list[dict], field: str, count: int) -> list[str]:
    """The ``count`` labels with the largest ``field`` in any release, largest first: the chart's lines."""
    best: dict[str, float] = {}
    for release in releases:
        for item in release["items"]:
            best[item["label"]] = max(best.get(item["label"], -np.inf), item[field])
    return sorted(best, key=lambda label: -best[label])[:count]


def capture(path: Path, packets: int) -> None:
    """Four heavy sources with 9%, 7%, 6% and 5% of the packets, the rest spread over 50,000 others."""
    rng = np.random.default_rng(5)
    pick = np.searchsorted(np.cumsum([0.09, 0.07, 0.06, 0.05]), rng.random(packets), side="right")
    sources = np.where(pick < HEAVY.size, HEAVY[np.minimum(pick, HEAVY.size - 1)],
                       0x0B000000 + rng.integers(0, 50_000, packets).astype(np.uint32))
    path.write_bytes(pcap_bytes(sources.astype(np.uint32), caplen=60))


@pytest.fixture(scope="module")
def piped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``dpstream watch - < capture | dpstream live - --port 0`` run to the end of the capture: the page's URL."""
    tmp = tmp_path_factory.mktemp("live")
    capture(tmp / "c.pcap", 1_200_000)
    with (tmp / "c.pcap").open("rb") as packets:
        watch = subprocess.Popen([sys.executable, "-m", "dpstream", "watch", "-", "--seed", "1", "--noise", "derived",
                                  "--k", "32", "--k-tilde", "256", "--flush-every", "16", "--every", "32768",
                                  "--horizon", "262144",
                                  "--state", str(tmp / "state.json")], stdin=packets, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env=child_env())
    live = subprocess.Popen([sys.executable, "-m", "dpstream", "live", "-", "--port", "0"], stdin=watch.stdout,
                            stderr=subprocess.PIPE, text=True, env=child_env())
    assert watch.stdout is not None and live.stderr is not None
    watch.stdout.close()  # live holds the pipe now
    try:
        first = live.stderr.readline()
        assert first.startswith("serving http://127.0.0.1:"), first
        assert watch.wait(timeout=600) == 0
        assert live.stderr.readline().startswith("end of input:")
        yield first.split()[1]
    finally:
        live.terminate()
        live.wait(timeout=10)


def test_the_page_shows_what_watch_released(piped: str, tmp_path: Path) -> None:
    answer = json.loads(get(piped + "releases?since=0")[2])
    last = answer["releases"][-1]
    assert answer["ended"] and last["epoch"] >= 1 and len(last["items"]) >= 2  # the run reports; else nothing to see
    dom = render(piped)
    kind, flag = text_of(dom, "deployable")
    assert kind == "no" and flag.startswith("NOT DEPLOYABLE: seeded (--seed)")
    assert table_labels(dom) == [item["label"] for item in last["items"]]
    assert legend_labels(dom) == largest(answer["releases"], "epoch_estimate", 10)
    _, privacy = text_of(dom, "privacy")
    assert f"epsilon {last['privacy']['epsilon']:g}" in privacy and last["privacy"]["relation"] in privacy
    _, status = text_of(dom, "status")
    assert f"step {last['step']}" in status and f"epoch {last['epoch']}" in status and "input ended" in status
    bands = re.findall(r'<polygon points="([^"]+)"', dom)  # the epoch intervals: a band a run of 2+ releases
    assert bands and all(len(b.split()) >= 4 and len(b.split()) % 2 == 0 for b in bands)
    marks = re.findall(r'<g class="epoch">(.*?)</g>', dom, flags=re.S)
    assert marks and re.findall(r">epoch (\d+)<", marks[0]) == [str(e) for e in range(last["epoch"] + 1)]
    total = render(piped + "?plot=total&items=5")  # the estimates over all epochs: no interval, so no band
    assert "<polygon" not in total and legend_labels(total) == largest(answer["releases"], "estimate", 5)
    render(piped, f"--screenshot={tmp_path / 'page.png'}", "--window-size=1000,1100")
    assert (tmp_path / "page.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_deployable_release_is_flagged_deployable(tmp_path: Path) -> None:
    """The watcher's lines with ``deployable`` set to true (a rendering check: no such run is made here)."""
    path = tmp_path / "r.jsonl"
    lines = [json.loads(line) | {"deployable": True} for line in WATCH_LINES.read_text().splitlines()]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    server = LiveServer(open(path, "rb"), str(path), follow=True, port=0)
    thread = threading.Thread(target=server.serve)
    thread.start()
    try:
        wait_for(server.url, len(lines))
        dom = render(server.url)
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.close()
    kind, flag = text_of(dom, "deployable")
    assert (kind, flag) == ("yes", "deployable: exact discrete noise keyed from the operating system")
    assert "NOT DEPLOYABLE" not in dom
    assert table_labels(dom) == [item["label"] for item in lines[-1]["items"]]
