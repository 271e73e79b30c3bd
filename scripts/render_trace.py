"""Opens a Kindle profiler trace in Chrome's trace viewer inside headless Chromium, checks what
the viewer made of it and saves a screenshot. Not part of the unit tests (it needs a browser).

    apt-get install chromium                      # Debian's package
    python scripts/render_trace.py [--trace T.json] [--out shot.png]

The viewer is catapult's trace viewer (the one behind chrome://tracing, which Chromium no longer
ships), bundled with its web-component polyfills in the `xprof` wheel from PyPI (TensorBoard's
profiler); the script downloads that wheel once into ~/.cache/kindle-trace-viewer. Chromium is
driven over the DevTools protocol on a pipe (--remote-debugging-pipe), so nothing but the
standard library is needed. Without --trace, a trace of three training steps of a small
convolutional network is recorded first (with shapes, FLOPs and module ranges).

Checks (exit status 1 if one fails): the viewer imports the trace without warnings, shows one
slice per complete ("X") event with the same names, nests ops inside their record_function and
module ranges, and the screenshot is not blank.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

CACHE = os.path.join(os.path.expanduser("~"), ".cache", "kindle-trace-viewer")
VIEWER = os.path.join(CACHE, "xprof", "static", "trace_viewer_index.html")


def fetch_viewer():
    if os.path.exists(VIEWER):
        return VIEWER
    os.makedirs(CACHE, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", d, "xprof"], check=True)
        wheel = next(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".whl"))
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if name.startswith("xprof/static/") and not name.endswith("/"):
                    z.extract(name, CACHE)
    return VIEWER


def record_trace(path):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import kindle
    from kindle.profiler import profile, record_function
    kindle.manual_seed(0)
    nn = kindle.nn
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 30 * 30, 10))
    opt = kindle.optim.SGD(model.parameters(), lr=0.01)
    x, y = kindle.randn(16, 3, 32, 32), kindle.randint(0, 10, (16,))
    with profile(record_shapes=True, with_flops=True, with_modules=True) as prof:
        for _ in range(3):
            with record_function("train_step"):
                opt.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
    prof.export_chrome_trace(path)


class Chromium:
    """Chromium with the DevTools protocol on fds 3 (commands in) and 4 (replies out)."""

    def __init__(self, binary, profile_dir, size=(1400, 800)):
        os.makedirs(profile_dir, exist_ok=True)
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def wire():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--allow-file-access-from-files", f"--window-size={size[0]},{size[1]}", f"--user-data-dir={profile_dir}",
             "about:blank"], preexec_fn=wire, pass_fds=(3, 4), stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.pending, self.next_id = b"", 0

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self.pending:
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium exited")
                self.pending += chunk
            raw, self.pending = self.pending.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def evaluate(self, session, expression):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                      session)
        if "exceptionDetails" in r:
            raise RuntimeError(f"in the page: {r['exceptionDetails'].get('exception', {}).get('description')}")
        return r["result"].get("value")

    def close(self):
        try:
            self.send("Browser.close")
        except RuntimeError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# Builds the viewer's timeline (as catapult's trace embedding does), imports the trace, fits it
# to the window, selects the first convolution (its arguments show in the panel below) and
# reports what the model holds.
LOAD = """(async () => {
  const text = TRACE_TEXT;
  const stock = document.querySelector('tf-trace-viewer');
  if (stock) stock.remove();
  const viewer = document.createElement('tr-ui-timeline-view');
  const container = document.createElement('track-view-container');
  container.id = 'track_view_container';
  viewer.track_view_container = container;
  Polymer.dom(viewer).appendChild(container);
  viewer.style.width = '100%'; viewer.style.height = '100%';
  Polymer.dom(document.body).appendChild(viewer);
  const model = new tr.Model();
  await new tr.importer.Import(model).importTracesWithProgressDialog([text]);
  viewer.model = model;
  viewer.viewTitle = 'Kindle profiler trace';
  await new Promise(r => setTimeout(r, 500));
  for (const el of Array.from(document.querySelectorAll('*')))
    if (/overlay/i.test(el.tagName)) el.style.display = 'none';
  viewer.trackView.setInitialViewport_();
  const slices = model.getAllThreads().flatMap(t => t.sliceGroup.slices);
  const conv = slices.find(s => s.title === 'aten::conv2d');
  if (conv) viewer.brushingStateController.changeSelectionFromTimeline(new tr.model.EventSet([conv]));
  await new Promise(r => setTimeout(r, 500));
  return {warnings: model.importWarnings.map(w => w.message), threads: model.getAllThreads().length,
          names: slices.map(s => s.title),
          nested: slices.filter(s => s.parentSlice).map(s => [s.title, s.parentSlice.title])};
})()"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", help="a Chrome trace written by kindle.profiler (default: record one)")
    ap.add_argument("--out", default="kindle_trace.png", help="where the screenshot goes")
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    args = ap.parse_args()
    if not args.chromium:
        sys.exit("render_trace: Chromium not found (apt-get install chromium)")
    work = tempfile.mkdtemp(prefix="kindle-trace-")
    trace_path = args.trace or os.path.join(work, "trace.json")
    if not args.trace:
        record_trace(trace_path)
    with open(trace_path) as f:
        text = f.read()
    events = [e for e in json.loads(text)["traceEvents"] if e.get("ph") == "X"]
    viewer = fetch_viewer()

    chrome = Chromium(args.chromium, os.path.join(work, "profile"))
    failures = []
    try:
        target = chrome.send("Target.createTarget", {"url": "file://" + viewer})["targetId"]
        session = chrome.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for _ in range(100):  # the bundle defines the viewer's elements once its scripts ran
            if chrome.evaluate(session, "typeof tr !== 'undefined' && typeof Polymer !== 'undefined' && "
                                        "!!customElements.get && document.readyState === 'complete'"):
                break
            time.sleep(0.2)
        seen = chrome.evaluate(session, LOAD.replace("TRACE_TEXT", json.dumps(text)))
        shot = base64.b64decode(chrome.send("Page.captureScreenshot", {"format": "png"}, session)["data"])
    finally:
        chrome.close()
        shutil.rmtree(os.path.join(work, "profile"), ignore_errors=True)
    with open(args.out, "wb") as f:
        f.write(shot)

    if seen["warnings"]:
        failures.append(f"import warnings: {seen['warnings']}")
    if sorted(seen["names"]) != sorted(e["name"] for e in events):
        failures.append(f"{len(seen['names'])} slices shown for {len(events)} complete events")
    parents = {child: parent for child, parent in seen["nested"]}
    if not args.trace:
        if parents.get("aten::conv2d") != "nn.Module: Conv2d_0" or "train_step" not in set(parents.values()):
            failures.append(f"ops not nested in their module and step ranges: {sorted(set(seen['nested']))[:10]}")
    if len(shot) < 20000:  # a blank page compresses to a few kilobytes
        failures.append(f"the screenshot looks blank ({len(shot)} bytes)")
    print(f"render_trace: {len(events)} events, {len(seen['names'])} slices on {seen['threads']} thread(s), "
          f"{len(seen['nested'])} nested; screenshot {args.out} ({len(shot)} bytes)")
    for f in failures:
        print("render_trace: FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
