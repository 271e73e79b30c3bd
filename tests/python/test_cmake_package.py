"""A pip-installed Kindle serves C++ programs: find_package(Kindle) with
CMAKE_PREFIX_PATH=kindle.utils.cmake_prefix_path builds and runs tests/cmake_consumer against the
installed package's headers and libkindle."""
import os
import shutil
import subprocess

import pytest

import kindle

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_cmake_prefix_path_points_into_the_package():
    assert kindle.utils.cmake_prefix_path == os.path.join(os.path.dirname(kindle.__file__), "share", "cmake")


def test_find_package_from_the_python_install(tmp_path):
    config = os.path.join(kindle.utils.cmake_prefix_path, "Kindle", "KindleConfig.cmake")
    if not os.path.exists(config):
        pytest.skip("kindle is imported from a source tree, not an installed wheel (no share/cmake)")
    cmake = shutil.which("cmake")
    assert cmake, "cmake is needed to build C++ programs against Kindle (scripts/test.sh installs it)"
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    build = tmp_path / "build"
    env = dict(os.environ, GOMP_SPINCOUNT="10000")
    run = lambda *cmd: subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    conf = run(cmake, "-S", os.path.join(ROOT, "tests", "cmake_consumer"), "-B", str(build), *gen,
               f"-DCMAKE_PREFIX_PATH={kindle.utils.cmake_prefix_path}")
    assert conf.returncode == 0, conf.stdout + conf.stderr
    made = run(cmake, "--build", str(build))
    assert made.returncode == 0, made.stdout[-4000:] + made.stderr[-4000:]
    out = run(str(build / "consumer"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "linear regression loss" in out.stdout
    # The opt-in libtorch compatibility target (find_package(Kindle COMPONENTS torch_compat)).
    out = run(str(build / "consumer_torch"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "torch_compat consumer" in out.stdout
