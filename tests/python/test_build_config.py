"""kindle.__config__ (torch.__config__): the build's description and its thread settings."""
import kindle


def test_show_names_the_libraries_this_build_uses():
    text = kindle.__config__.show()
    assert text.startswith("Kindle built with:")
    assert f"CPU capability usage: {kindle.backends.cpu.get_cpu_capability()}" in text
    blas = "Intel MKL" if kindle.backends.mkl.is_available() else "OpenBLAS"
    assert f"BLAS and LAPACK: {blas}" in text
    vector_math = kindle._C._vector_math_library()
    assert vector_math in ("sleef", "libmvec")
    assert ("Vector math: SLEEF" in text) == (vector_math == "sleef")


def test_parallel_info_reports_the_thread_counts():
    previous = kindle.get_num_threads()
    try:
        kindle.set_num_threads(1)
        assert "at::get_num_threads() : 1" in kindle.__config__.parallel_info()
    finally:
        kindle.set_num_threads(previous)
