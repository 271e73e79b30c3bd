"""The names PyTorch programs use beyond the op database: the torch.* forms of nn ops (ATen's
argument orders), Tensor.resize_, the random fills that draw as torch's kernels do, asarray /
frombuffer, the lazy modules, torch.nn.grad, the runtime switches, and the removed functions'
errors. Each is compared with torch where torch is installed. A last test lists the public
names of torch's main namespaces that Kindle still lacks: it fails when a new gap appears and
when a listed one is closed."""
import warnings

import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")


def K(a):
    return kindle.tensor(np.asarray(a))


def T(a):
    return torch.tensor(np.asarray(a))


def close(a, b, tol=1e-6):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


RNG = np.random.default_rng(0)
X4 = RNG.standard_normal((2, 4, 6, 6)).astype(np.float32)


# ---- torch.* names of nn ops, with ATen's argument orders

def test_aten_nn_forms_match_torch():
    x, w = RNG.standard_normal((2, 3, 5, 5)).astype(np.float32), RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    close(kindle.conv2d(K(x), K(w), None, 1, 1), torch.conv2d(T(x), T(w), None, 1, 1), 1e-5)
    wt, b, rm, rv = (RNG.random(3).astype(np.float32) + 0.5 for _ in range(4))
    close(kindle.batch_norm(K(x), K(wt), K(b), K(rm), K(rv), False, 0.1, 1e-5, True),
          torch.batch_norm(T(x), T(wt), T(b), T(rm), T(rv), False, 0.1, 1e-5, True), 1e-5)
    close(kindle.instance_norm(K(x), K(wt), K(b), None, None, True, 0.1, 1e-5, True),
          torch.instance_norm(T(x), T(wt), T(b), None, None, True, 0.1, 1e-5, True), 1e-5)
    close(kindle.layer_norm(K(x), [5, 5]), torch.layer_norm(T(x), [5, 5]), 1e-5)
    close(kindle.group_norm(K(x), 3), torch.group_norm(T(x), 3), 1e-5)
    emb = RNG.standard_normal((6, 3)).astype(np.float32)
    idx = np.array([[0, 5], [2, 2]])
    close(kindle.embedding(K(emb), K(idx)), torch.embedding(T(emb), T(idx)))
    a, t = RNG.standard_normal((4, 5)).astype(np.float32), RNG.random((4, 5)).astype(np.float32)
    for r in (0, 1, 2):
        close(kindle.kl_div(K(a), K(t), r), torch.kl_div(T(a), T(t), r), 1e-5)
        close(kindle.binary_cross_entropy_with_logits(K(a), K(t), None, None, r),
              torch.binary_cross_entropy_with_logits(T(a), T(t), None, None, r), 1e-5)
        close(kindle.hinge_embedding_loss(K(a), K(np.sign(t - 0.5)), 1.0, r),
              torch.hinge_embedding_loss(T(a), T(np.sign(t - 0.5)), 1.0, r), 1e-5)
    close(kindle.max_pool2d(K(x), 2), torch.max_pool2d(T(x), 2))
    close(kindle.max_pool1d(K(a[None]), 2), torch.max_pool1d(T(a[None]), 2))
    v, i = kindle.max_pool1d_with_indices(K(a[None]), 2)
    tv, ti = torch.max_pool1d_with_indices(T(a[None]), 2)
    close(v, tv)
    close(i, ti)
    close(kindle.avg_pool1d(K(a[None]), 3, 1, 1), torch.avg_pool1d(T(a[None]), 3, 1, 1), 1e-6)
    close(kindle.adaptive_max_pool1d(K(a[None]), 2)[0], torch.adaptive_max_pool1d(T(a[None]), 2)[0])
    close(kindle.pixel_shuffle(K(X4), 2), torch.pixel_shuffle(T(X4), 2))
    close(kindle.hardshrink(K(a), 0.3), torch.hardshrink(T(a), 0.3))
    close(kindle.pdist(K(a)), torch.pdist(T(a)), 1e-5)
    close(kindle.rsub(K(a), 2.0, alpha=3), torch.rsub(T(a), 2.0, alpha=3))
    close(kindle.rsub(K(a), K(t)), torch.rsub(T(a), T(t)))
    close(kindle.constant_pad_nd(K(a), [1, 2], 3.0), torch.constant_pad_nd(T(a), [1, 2], 3.0))
    h, c, wih, whh = (RNG.standard_normal(s).astype(np.float32) for s in ((2, 3), (2, 3), (12, 5), (12, 3)))
    inp = RNG.standard_normal((2, 5)).astype(np.float32)
    for kv, tv_ in zip(kindle.lstm_cell(K(inp), (K(h), K(c)), K(wih), K(whh)),
                       torch.lstm_cell(T(inp), (T(h), T(c)), T(wih), T(whh))):
        close(kv, tv_, 1e-5)
    tbc_in, tbc_w, tbc_b = (RNG.standard_normal(s).astype(np.float32) for s in ((7, 2, 3), (3, 3, 4), (4,)))
    close(kindle.conv_tbc(K(tbc_in), K(tbc_w), K(tbc_b), 1), torch.conv_tbc(T(tbc_in), T(tbc_w), T(tbc_b), 1), 1e-5)
    out, mean, rstd = kindle.native_layer_norm(K(x), [5, 5], None, None, 1e-5)
    tout, tmean, trstd = torch.native_layer_norm(T(x), [5, 5], None, None, 1e-5)
    close(out, tout, 1e-5)
    close(mean, tmean, 1e-5)
    close(rstd, trstd, 1e-4)


def test_reductions_as_ints_are_checked():
    with pytest.raises(ValueError):
        kindle.kl_div(kindle.ones(2), kindle.ones(2), 5)


# ---- random fills and random nn ops draw torch's values for the same seed

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_fills_match_torch(dtype):
    for name, args in (("cauchy_", ()), ("cauchy_", (1.0, 0.5)), ("geometric_", (0.3,)), ("log_normal_", ()),
                       ("log_normal_", (0.5, 0.25))):
        kindle.manual_seed(7)
        torch.manual_seed(7)
        a = getattr(kindle.empty(13, dtype=getattr(kindle, dtype)), name)(*args)
        b = getattr(torch.empty(13, dtype=getattr(torch, dtype)), name)(*args)
        close(a, b, 1e-6 if dtype == "float64" else 1e-5)


def test_random_nn_ops_match_torch():
    import kindle.nn.functional as KF
    import torch.nn.functional as TF
    for fn in (lambda F, lib, x: F.rrelu(x, training=True), lambda F, lib, x: F.gumbel_softmax(x, tau=0.5),
               lambda F, lib, x: F.gumbel_softmax(x, hard=True), lambda F, lib, x: F.feature_alpha_dropout(x, 0.3, True),
               lambda F, lib, x: lib.feature_dropout(x, 0.4, True), lambda F, lib, x: lib.rrelu(x, 0.1, 0.3, True)):
        kindle.manual_seed(3)
        torch.manual_seed(3)
        close(fn(KF, kindle, K(X4)), fn(TF, torch, T(X4)), 1e-5)


def test_random_fill_errors():
    with pytest.raises(RuntimeError):
        kindle.empty(3).geometric_(1.5)
    with pytest.raises(RuntimeError):
        kindle.empty(3).cauchy_(0.0, -1.0)
    with pytest.raises(NotImplementedError):
        kindle.empty(3, dtype=kindle.int64).log_normal_()


def test_rrelu_gradient_is_the_drawn_slope():
    x = kindle.tensor([-1.0, 2.0, -3.0], requires_grad=True)
    kindle.manual_seed(0)
    y = kindle.nn.functional.rrelu(x, training=True)
    y.sum().backward()
    slopes = (y / x).detach()
    close(x.grad, slopes)
    assert ((slopes[[0, 2]] >= 1 / 8) & (slopes[[0, 2]] <= 1 / 3)).all() and slopes[1] == 1


# ---- Tensor.resize_ and friends

def test_resize_keeps_values_and_grows_storage():
    t = kindle.arange(6.0)
    t.resize_(2, 2)
    assert t.shape == (2, 2) and t.stride() == (2, 1) and t.flatten().tolist() == [0, 1, 2, 3]
    t.resize_(3, 4)  # larger than the storage: a new one that starts with the old values
    assert t.shape == (3, 4) and t.flatten()[:6].tolist() == [0, 1, 2, 3, 4, 5]
    t.resize_(0)
    assert t.numel() == 0
    t.resize_as_(kindle.ones(2, 5))
    assert t.shape == (2, 5)
    with pytest.raises(RuntimeError, match="require grad"):
        kindle.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError):
        kindle.ones(2).resize_(-1)
    out = kindle.empty(0)
    r = kindle.add(kindle.ones(2, 3), 1, out=out)
    assert r is out and out.shape == (2, 3)


def test_addbmm_broadcast_input():
    a, b1, b2 = (RNG.standard_normal(s).astype(np.float32) for s in ((5,), (2, 3, 4), (2, 4, 5)))
    close(kindle.addbmm(K(a), K(b1), K(b2), beta=0.5), torch.addbmm(T(a), T(b1), T(b2), beta=0.5), 1e-5)


# ---- array interop

def test_asarray_and_frombuffer():
    arr = np.arange(4, dtype=np.float32)
    t = kindle.asarray(arr)
    arr[0] = 9
    assert t[0].item() == 9  # shares memory
    assert kindle.asarray(arr, copy=True).data_ptr() != t.data_ptr()
    assert kindle.asarray([1, 2]).dtype == kindle.int64
    x = kindle.ones(2)
    assert kindle.asarray(x) is x
    assert kindle.asarray(x, dtype=kindle.float64).dtype == kindle.float64
    with pytest.raises(ValueError):
        kindle.asarray(x, dtype=kindle.float64, copy=False)
    buf = bytearray(8)
    b = kindle.frombuffer(buf, dtype=kindle.int32)
    b[1] = 5
    assert buf[4] == 5
    assert kindle.frombuffer(b"\x01\x00\x02\x00", dtype=kindle.int16).tolist() == [1, 2]
    assert kindle.frombuffer(buf, dtype=kindle.int16, count=2, offset=2).shape == (2,)


# ---- functions with torch's Python-level forms

def test_python_level_functions_match_torch():
    a = RNG.standard_normal((3, 3)).astype(np.float32)
    kl, kp = kindle.lu(K(a))
    tl, tp = torch.lu(T(a))
    close(kl, tl, 1e-5)
    close(kp, tp)
    for x, y in zip(kindle.lu_unpack(kl, kp), torch.lu_unpack(tl, tp)):
        close(x, y, 1e-5)
    batch = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    P, L, U = kindle.lu_unpack(*kindle.linalg.lu_factor(K(batch)))
    close(P @ L @ U, batch, 1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        close(kindle.chain_matmul(K(a), K(a), K(a)), torch.chain_matmul(T(a), T(a), T(a)), 1e-5)
        close(kindle.range(1, 2, 0.25), torch.range(1, 2, 0.25))
    close(kindle.nuclear_norm(K(a)), torch.nuclear_norm(T(a)), 1e-5)
    close(kindle.frobenius_norm(K(a), (0, 1)), torch.frobenius_norm(T(a), (0, 1)), 1e-5)
    close(kindle.norm_except_dim(K(a), 2, 1), torch.norm_except_dim(T(a), 2, 1), 1e-6)
    close(kindle.nonzero_static(K([0, 3, 0, 1]), size=4), torch.nonzero_static(T([0, 3, 0, 1]), size=4))
    close(kindle.nonzero_static(K([0, 3, 0, 1]), size=1), torch.nonzero_static(T([0, 3, 0, 1]), size=1))
    assert kindle.empty_permuted((2, 3, 4), (0, 2, 1)).stride() == torch.empty_permuted((2, 3, 4), (0, 2, 1)).stride()
    close(kindle.fill(K(a), 2.5), torch.fill(T(a), 2.5))
    assert kindle.cond(kindle.tensor(False), lambda x: x + 1, lambda x: x - 1, (kindle.ones(1),)).item() == 0
    assert kindle.while_loop(lambda i: i < 5, lambda i: i + 2, (kindle.tensor(0),))[0].item() == 6
    for a_, b_ in zip(kindle.unsafe_split(K(np.arange(5)), 2), torch.unsafe_split(T(np.arange(5)), 2)):
        close(a_, b_)


def test_removed_functions_say_so():
    for name in ("lstsq", "symeig", "eig", "solve", "matrix_rank"):
        with pytest.raises(RuntimeError, match="removed"):
            getattr(kindle, name)(kindle.eye(2), kindle.eye(2))


def test_tensor_methods():
    x = kindle.arange(6.0).reshape(2, 3)
    assert x.get_device() == -1 and kindle.get_device(x) == -1
    assert x.is_signed() and not kindle.ones(1, dtype=kindle.uint8).is_signed()
    assert x.cfloat().dtype == kindle.complex64 and x.cdouble().dtype == kindle.complex128
    with pytest.raises(TypeError):
        x.chalf()
    close(x.where(x > 2, -1.0), T(np.arange(6.0).reshape(2, 3)).where(T(np.arange(6.0).reshape(2, 3)) > 2, -1.0))
    assert x.new(2, 3).shape == (2, 3) and x.new([1, 2]).dtype == x.dtype and x.new().numel() == 0
    assert not x.is_pinned()
    with pytest.raises(RuntimeError, match="accelerator"):
        x.pin_memory()
    y = kindle.ones(2, 2)
    y.apply_(lambda v: v * 3)
    assert y.tolist() == [[3, 3], [3, 3]]
    y.map_(kindle.tensor([1.0, 2.0]), lambda a, b: a + b)
    assert y.tolist() == [[4, 5], [4, 5]]
    assert x.new_empty_strided((2, 2), (1, 2)).stride() == (1, 2)
    assert not x.is_distributed()
    close(x.prelu(kindle.tensor([0.5])), torch.arange(6.0).reshape(2, 3).prelu(torch.tensor([0.5])))


def test_runtime_switches():
    assert kindle.get_num_interop_threads() >= 1
    assert kindle.is_warn_always_enabled() is False
    kindle.set_warn_always(True)
    assert kindle.is_warn_always_enabled()
    kindle.set_warn_always(False)
    assert not kindle.is_anomaly_enabled()
    kindle.set_anomaly_enabled(True)
    assert kindle.is_anomaly_enabled()
    kindle.set_anomaly_enabled(False)
    assert kindle.set_flush_denormal(True) in (True, False)
    assert kindle.compiled_with_cxx11_abi() and not kindle.is_vulkan_available()
    assert not isinstance(3, kindle.SymInt)
    assert kindle.legacy_contiguous_format is kindle.contiguous_format
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kindle.set_default_tensor_type(kindle.DoubleTensor)
        try:
            assert kindle.ones(1).dtype == kindle.float64
        finally:
            kindle.set_default_tensor_type("torch.FloatTensor")
        assert kindle.ones(1).dtype == kindle.float32
        with pytest.raises(RuntimeError, match="CUDA"):
            kindle.set_default_tensor_type("torch.cuda.FloatTensor")
    assert kindle.GradScaler is kindle.amp.GradScaler
    cap = kindle.to_dlpack(kindle.ones(2))
    assert kindle.from_dlpack(cap).tolist() == [1.0, 1.0]


# ---- nn modules and functions

def test_new_modules_match_torch():
    import kindle.nn as knn
    import torch.nn as tnn
    for kcls, tcls, args in ((knn.Softshrink, tnn.Softshrink, (0.3,)), (knn.Hardshrink, tnn.Hardshrink, ()),
                             (knn.LocalResponseNorm, tnn.LocalResponseNorm, (3,)),
                             (knn.CrossMapLRN2d, tnn.CrossMapLRN2d, (3,)), (knn.RReLU, tnn.RReLU, ())):
        km, tm = kcls(*args).eval(), tcls(*args).eval()
        close(km(K(X4)), tm(T(X4)), 1e-5)
        assert repr(km) == repr(tm)
    y = (RNG.random((4, 5)) > 0.5).astype(np.float32)
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    close(knn.MultiLabelSoftMarginLoss()(K(a), K(y)), tnn.MultiLabelSoftMarginLoss()(T(a), T(y)), 1e-6)
    close(knn.SoftMarginLoss()(K(a), K(2 * y - 1)), tnn.SoftMarginLoss()(T(a), T(2 * y - 1)), 1e-6)
    v, i = knn.MaxPool2d(2, return_indices=True)(K(X4))
    tv, ti = tnn.MaxPool2d(2, return_indices=True)(T(X4))
    close(knn.MaxUnpool2d(2)(v, i), tnn.MaxUnpool2d(2)(tv, ti))
    close(knn.MaxUnpool2d(2)(v, i, output_size=[7, 7]), tnn.MaxUnpool2d(2)(tv, ti, output_size=[7, 7]))
    assert repr(knn.MaxUnpool2d(2)) == repr(tnn.MaxUnpool2d(2))
    kindle.manual_seed(2)
    torch.manual_seed(2)
    close(knn.FeatureAlphaDropout(0.2)(K(X4)), tnn.FeatureAlphaDropout(0.2)(T(X4)), 1e-5)
    assert issubclass(knn.NLLLoss2d, knn.NLLLoss)


def test_grid_sample_gradients_match_torch():
    import kindle.nn.functional as KF
    import torch.nn.functional as TF
    x = RNG.standard_normal((1, 2, 4, 5))
    g = RNG.uniform(-1.1, 1.1, (1, 3, 2, 2))
    for mode, pad in (("bilinear", "zeros"), ("bilinear", "reflection"), ("bicubic", "border")):
        kx, kg = K(x).requires_grad_(), K(g).requires_grad_()
        tx, tg = T(x).requires_grad_(), T(g).requires_grad_()
        (KF.grid_sample(kx, kg, mode, pad, False) ** 2).sum().backward()
        (TF.grid_sample(tx, tg, mode, pad, False) ** 2).sum().backward()
        close(kx.grad, tx.grad, 1e-9)
        close(kg.grad, tg.grad, 1e-9)
    with pytest.warns(UserWarning, match="align_corners"):
        KF.grid_sample(K(x), K(g))


def test_lazy_modules_match_torch():
    import kindle.nn as knn
    import torch.nn as tnn
    for kcls, tcls, args, shape in ((knn.LazyLinear, tnn.LazyLinear, (4,), (2, 6)),
                                    (knn.LazyConv2d, tnn.LazyConv2d, (4, 3), (2, 6, 5, 5)),
                                    (knn.LazyConv1d, tnn.LazyConv1d, (4, 3), (6, 5)),
                                    (knn.LazyConvTranspose2d, tnn.LazyConvTranspose2d, (4, 3), (2, 6, 5, 5)),
                                    (knn.LazyBatchNorm2d, tnn.LazyBatchNorm2d, (), (2, 6, 5, 5)),
                                    (knn.LazyInstanceNorm1d, tnn.LazyInstanceNorm1d, (), (2, 6, 5))):
        kindle.manual_seed(5)
        torch.manual_seed(5)
        km, tm = kcls(*args), tcls(*args)
        assert repr(km) == repr(tm)
        assert all(isinstance(p, knn.UninitializedParameter) for p in km.parameters())
        x = RNG.standard_normal(shape).astype(np.float32)
        close(km(K(x)), tm(T(x)), 1e-5)
        assert type(km).__name__ == type(tm).__name__ and repr(km) == repr(tm)
        for (kn, kp), (tn, tp) in zip(km.named_parameters(), tm.named_parameters()):
            assert kn == tn and type(kp) is knn.Parameter
            close(kp, tp)


def test_lazy_module_keeps_parameter_identity_and_loads_state():
    import kindle.nn as knn
    m = knn.Sequential(knn.LazyLinear(3), knn.ReLU(), knn.LazyLinear(2))
    params = list(m.parameters())
    opt = kindle.optim.SGD(params, lr=0.1)
    m = m.double()
    out = m(kindle.randn(4, 5, dtype=kindle.float64))
    assert out.dtype == kindle.float64 and [p for p in m.parameters()] == params
    out.sum().backward()
    opt.step()
    fresh = knn.Sequential(knn.LazyLinear(3), knn.ReLU(), knn.LazyLinear(2)).double()
    fresh.load_state_dict(m.state_dict())
    x = kindle.randn(2, 5, dtype=kindle.float64)
    close(fresh(x), m(x))
    with pytest.raises(ValueError, match="uninitialized"):
        knn.LazyLinear(2).weight + 1


def test_nn_grad_matches_torch():
    x = RNG.standard_normal((2, 4, 7, 7)).astype(np.float32)
    w = RNG.standard_normal((6, 2, 3, 3)).astype(np.float32)
    go = RNG.standard_normal((2, 6, 4, 4)).astype(np.float32)
    close(kindle.nn.grad.conv2d_input(x.shape, K(w), K(go), 2, 1, 1, 2),
          torch.nn.grad.conv2d_input(x.shape, T(w), T(go), 2, 1, 1, 2), 1e-4)
    close(kindle.nn.grad.conv2d_weight(K(x), w.shape, K(go), 2, 1, 1, 2),
          torch.nn.grad.conv2d_weight(T(x), w.shape, T(go), 2, 1, 1, 2), 1e-4)
    x1, w1, go1 = x[:, :, 0], w[:, :, 0], RNG.standard_normal((2, 6, 5)).astype(np.float32)
    close(kindle.nn.grad.conv1d_weight(K(x1), w1.shape, K(go1), groups=2),
          torch.nn.grad.conv1d_weight(T(x1), w1.shape, T(go1), groups=2), 1e-4)


# ---- what is still missing: the list only shrinks

# Public names of torch's namespaces Kindle does not have, by reason. Quantization, TorchScript
# internals, symbolic shapes, sparse compressed layouts and the internal ATen kernels are out of
# scope for now; the rest are gaps.
NOT_YET = {
    "torch": {
        # TorchScript / JIT internals and C++ binding types
        "AliasDb", "Argument", "ArgumentSpec", "Block", "CallStack", "Capsule", "Code", "CompilationUnit",
        "CompleteArgumentSpec", "DeepCopyMemoTable", "DispatchKey", "DispatchKeySet", "ErrorReport",
        "ExcludeDispatchKeyGuard", "ExecutionPlan", "FatalError", "FileCheck", "FunctionSchema", "Gradient",
        "Graph", "GraphExecutorState", "IODescriptor", "JITException", "LiteScriptModule", "LockingLogger",
        "LoggerBase", "NoopLogger", "OperatorInfo", "PyTorchFileReader", "PyTorchFileWriter", "ScriptClass",
        "ScriptClassFunction", "ScriptDict", "ScriptDictIterator", "ScriptDictKeyIterator", "ScriptFunction",
        "ScriptList", "ScriptListIterator", "ScriptMethod", "ScriptModule", "ScriptModuleSerializer",
        "ScriptObject", "ScriptObjectProperty", "StaticModule", "Tag", "ThroughputBenchmark", "TracingState",
        "Use", "Value", "BenchmarkConfig", "BenchmarkExecutionStats", "AggregationType", "AVG", "SUM",
        "PRIVATE_OPS", "ModuleDict", "ParameterDict", "BufferDict", "AcceleratorError", "Event", "Stream",
        "import_ir_module", "import_ir_module_from_buffer", "merge_type_from_type_comment", "parse_ir",
        "parse_schema", "parse_type_comment", "unify_type_list", "fork", "wait", "classes",
        "cpp", "package", "monitor", "ao", "quasirandom", "nested", "jagged",
        "mtia", "get_device_module", "thread_safe_generator", "prepare_multiprocessing_environment",
        "profiler_allow_cudagraph_cupti_lazy_reinit_cuda12", "get_file_path", "from_file", "USE_GLOBAL_DEPS",
        "USE_RTLD_GLOBAL_WITH_LIBTORCH", "TYPE_CHECKING", "classproperty", "quantization", "windows",
        "AnyType", "AwaitType", "BoolType", "ClassType", "ComplexType", "ConcreteModuleType",
        "ConcreteModuleTypeBuilder", "DeserializationStorageContext", "DeviceObjType", "DictType", "EnumType",
        "FloatType", "FutureType", "InferredType", "IntType", "InterfaceType", "ListType", "NoneType", "NumberType",
        "OptionalType", "PyObjectType", "RRefType", "SerializationStorageContext", "StreamObjType", "StringType",
        "SymBoolType", "SymIntType", "TensorType", "TupleType", "Type", "UnionType",
        "QInt32Storage", "QInt8Storage", "QUInt2x4Storage", "QUInt4x2Storage", "QUInt8Storage",
        # quantization
        "qint32", "qint8", "quint2x4", "quint4x2", "quint8", "qscheme", "per_channel_affine",
        "per_channel_affine_float_qparams", "per_channel_symmetric", "per_tensor_affine", "per_tensor_symmetric",
        "int_repr", "q_per_channel_axis", "q_per_channel_scales", "q_per_channel_zero_points", "q_scale",
        "q_zero_point", "dequantize", "quantize_per_channel", "quantize_per_tensor", "quantize_per_tensor_dynamic",
        "quantized_batch_norm", "quantized_gru", "quantized_gru_cell", "quantized_lstm", "quantized_lstm_cell",
        "quantized_max_pool1d", "quantized_max_pool2d", "quantized_max_pool3d", "quantized_rnn_relu_cell",
        "quantized_rnn_tanh_cell", "choose_qparams_optimized", "fake_quantize_per_channel_affine",
        "fake_quantize_per_tensor_affine", "fused_moving_avg_obs_fake_quant", "empty_quantized",
        "fbgemm_linear_fp16_weight", "fbgemm_linear_fp16_weight_fp32_activation", "fbgemm_linear_int8_weight",
        "fbgemm_linear_int8_weight_fp32_activation", "fbgemm_linear_quantize_weight", "fbgemm_pack_gemm_matrix_fp16",
        "fbgemm_pack_quantized_matrix", "bit", "bits16", "bits1x8", "bits2x4", "bits4x2", "bits8",
        # dtypes without kernels
        "float4_e2m1fn_x2", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
        "float8_e8m0fnu", "int1", "int2", "int3", "int4", "int5", "int6", "int7", "uint1", "uint2", "uint3", "uint4",
        "uint5", "uint6", "uint7", "uint16", "uint32", "uint64",
        # symbolic shapes
        "sym_constrain_range", "sym_constrain_range_for_size", "sym_float", "sym_fresh_size", "sym_int", "sym_ite",
        "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum",
        # sparse compressed layouts and sparse kernels
        "sparse_bsc", "sparse_bsc_tensor", "sparse_bsr", "sparse_bsr_tensor", "sparse_compressed_tensor",
        "sparse_csc", "sparse_csc_tensor", "sparse_csr_tensor", "hsmm", "hspmm", "saddmm", "smm", "sspaddmm", "dsmm",
        "resize_as_sparse_",
        # cuDNN / MIOpen / oneDNN kernels and autocast for other devices
        "cudnn_affine_grid_generator", "cudnn_batch_norm", "cudnn_convolution", "cudnn_convolution_add_relu",
        "cudnn_convolution_relu", "cudnn_convolution_transpose", "cudnn_grid_sampler", "cudnn_is_acceptable",
        "miopen_batch_norm", "miopen_convolution", "miopen_convolution_add_relu", "miopen_convolution_relu",
        "miopen_convolution_transpose", "miopen_ctc_loss", "miopen_depthwise_convolution", "miopen_rnn",
        "mkldnn_adaptive_avg_pool2d", "mkldnn_convolution", "mkldnn_linear_backward_weights", "mkldnn_max_pool2d",
        "mkldnn_max_pool3d", "mkldnn_rnn_layer", "get_autocast_ipu_dtype", "get_autocast_xla_dtype",
        "is_autocast_ipu_enabled", "is_autocast_xla_enabled", "set_autocast_ipu_dtype", "set_autocast_ipu_enabled",
        "set_autocast_xla_dtype", "set_autocast_xla_enabled",
        # internal ATen ops (batch norm's pieces, fused kernels) and the *_copy variants of views
        "batch_norm_backward_elemt", "batch_norm_backward_reduce", "batch_norm_elemt", "batch_norm_gather_stats",
        "batch_norm_gather_stats_with_counts", "batch_norm_stats", "batch_norm_update_stats", "native_group_norm",
        "native_norm", "affine_grid_generator", "grid_sampler_2d", "grid_sampler_3d", "convolution",
        "embedding_bag", "embedding_renorm_", "lstm", "gru", "rnn_relu", "rnn_tanh", "segment_reduce",
        "slice_inverse", "hash_tensor", "lobpcg", "histogramdd",
        "geqrf", "orgqr", "ormqr", "as_strided_", "addmv_", "alias_copy", "as_strided_copy", "as_strided_scatter",
        "ccol_indices_copy", "col_indices_copy", "crow_indices_copy", "detach_copy", "diagonal_copy", "expand_copy",
        "indices_copy", "permute_copy", "row_indices_copy", "select_copy", "slice_copy", "split_copy",
        "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy",
        "unsqueeze_copy", "values_copy", "view_as_complex_copy", "view_as_real_copy", "view_copy",
    },
}


NOT_YET["Tensor"] = {
    # sparse layouts and their accessors (Kindle's sparse COO tensor is its own class)
    "ccol_indices", "coalesce", "col_indices", "crow_indices", "dense_dim", "indices", "is_coalesced",
    "is_sparse_csr", "resize_as_sparse_", "row_indices", "smm", "sparse_dim", "sparse_mask", "sparse_resize_",
    "sparse_resize_and_clear_", "sspaddmm", "to_sparse_bsc", "to_sparse_bsr", "to_sparse_csc", "to_sparse_csr",
    "values", "to_padded_tensor",
    # in-place restriding
    "as_strided_", "as_strided_scatter",
    # quantization, oneDNN layouts
    "dequantize", "int_repr", "q_per_channel_axis", "q_per_channel_scales", "q_per_channel_zero_points", "q_scale",
    "q_zero_point", "qscheme", "to_mkldnn",
    # LAPACK's raw Householder forms, named tensors and the rest
    "geqrf", "orgqr", "ormqr", "name", "grad_dtype", "hash_tensor", "index", "reinforce",
    "slice_inverse",
}
NOT_YET["nn.functional"] = {
    # typing helpers and documentation strings of torch's module
    "BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "Callable", "DType", "Optional", "ScalingType",
    "SwizzleType", "TYPE_CHECKING", "GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES",
    "assert_int_or_pair", "boolean_dispatch", "dataclasses", "importlib", "math", "np", "torch",
    "reproducibility_notes", "sparse_support_notes", "tf32_notes",
    # low-precision GEMM entry points and the fused linear + cross-entropy
    "grouped_mm", "scaled_grouped_mm", "scaled_mm", "linear_cross_entropy",
}
NOT_YET["nn"] = {"LinearCrossEntropyLoss", "LinearCrossEntropyOptions", "intrinsic", "qat",
                 "quantizable", "quantized"}


def _missing(ns_t, ns_k):
    return {n for n in dir(ns_t) if not n.startswith("_") and not hasattr(ns_k, n)}


def test_missing_torch_names_only_shrink():
    import builtins
    import sys
    mods = {n for n in dir(torch) if isinstance(getattr(torch, n, None), type(sys))
            and not getattr(getattr(torch, n), "__name__", "").startswith("torch.")}  # stdlib modules torch imports
    mods |= {n for n in dir(builtins)}
    missing = _missing(torch, kindle) - mods
    listed = NOT_YET["torch"]
    new = sorted(missing - listed)
    closed = sorted(listed - missing)
    assert not new, f"torch names Kindle lacks and does not list: {new}"
    assert not closed, f"now present: remove from NOT_YET: {closed}"


@pytest.mark.parametrize("ns", ["Tensor", "nn.functional", "nn"])
def test_missing_names_only_shrink(ns):
    t = {"Tensor": torch.Tensor, "nn.functional": torch.nn.functional, "nn": torch.nn}[ns]
    k = {"Tensor": kindle.Tensor, "nn.functional": kindle.nn.functional, "nn": kindle.nn}[ns]
    missing = _missing(t, k)
    assert not sorted(missing - NOT_YET[ns]), f"{ns}: names Kindle lacks and does not list"
    assert not sorted(NOT_YET[ns] - missing), f"{ns}: now present, remove from NOT_YET"


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (2, 3, 4, 2), (1, 2, 3, 4, 5)])
@pytest.mark.parametrize("name", ["dropout2d", "dropout3d"])
def test_channel_dropout_on_every_rank_torch_accepts(name, shape):
    """dropout2d/3d on the ranks torch still accepts (with its deprecation warnings): the same
    channels dropped for the same seed; 1-D input to dropout2d is torch's error."""
    kindle.manual_seed(0)
    torch.manual_seed(0)
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        try:
            expected = getattr(torch.nn.functional, name)(torch.ones(*shape), 0.5)
        except RuntimeError:
            expected = None
    with warnings.catch_warnings(record=True) as kw:
        warnings.simplefilter("always")
        if expected is None:
            with pytest.raises(RuntimeError):
                getattr(kindle.nn.functional, name)(kindle.ones(*shape), 0.5)
            return
        got = getattr(kindle.nn.functional, name)(kindle.ones(*shape), 0.5)
    close(got, expected)
    assert bool(kw) == bool(tw), ([str(w.message) for w in kw], [str(w.message) for w in tw])


def test_python_level_functions_check_their_arguments():
    with pytest.raises(TypeError):
        kindle.atleast_1d(3)
    with pytest.raises(RuntimeError):
        kindle.unravel_index(kindle.tensor([1, 2]), (0, 3))
    assert [t.numel() for t in kindle.unravel_index(kindle.tensor([], dtype=kindle.int64), (0, 3))] == [0, 0]
    with pytest.raises(RuntimeError, match="int32"):
        kindle.lu_unpack(kindle.ones(3, 3), kindle.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError, match="2 or more dimensions"):
        kindle.lu_unpack(kindle.ones(3), kindle.tensor([1], dtype=kindle.int32))
    with pytest.raises(RuntimeError):
        kindle.lu_unpack(kindle.ones(3, 4), kindle.tensor([1, 2], dtype=kindle.int32))
