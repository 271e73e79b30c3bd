"""The runtime's process-level behaviour (issue 14): `import kindle` leaves the environment as
it found it, and set_num_threads applies to every thread of the process, as torch's does."""
import os
import subprocess
import sys
import threading

import kindle


def test_import_leaves_the_environment_alone():
    code = "import os; before = dict(os.environ); import kindle; assert dict(os.environ) == before, " \
           "set(os.environ) ^ set(before); print('ok')"
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_set_num_threads_is_process_wide():
    before = kindle.get_num_threads()
    try:
        kindle.set_num_threads(1)
        seen = []
        t = threading.Thread(target=lambda: seen.append(kindle.get_num_threads()))
        t.start()
        t.join()
        assert seen == [1]
        kindle.set_num_threads(2)
        t = threading.Thread(target=lambda: seen.append(kindle.get_num_threads()))
        t.start()
        t.join()
        assert seen == [1, 2]
    finally:
        kindle.set_num_threads(before)


def test_thread_count_default_is_not_taken_from_a_limited_thread():
    """A small factorisation limits its own thread to one; the process's default stays OpenMP's."""
    code = ("import kindle; kindle.linalg.cholesky(kindle.tensor([[4., 1.], [1., 3.]])); "
            "print(kindle.get_num_threads())")
    env = dict(os.environ, OMP_NUM_THREADS="3")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "3", (r.stdout, r.stderr[-2000:])
