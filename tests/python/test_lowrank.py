"""svd_lowrank / pca_lowrank: exact on matrices of rank <= q, singular values as torch's,
batched, both orientations, gradients, and torch's argument errors."""
import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")


def low_rank(shape, rank, seed=0):
    rng = np.random.default_rng(seed)
    *batch, m, n = shape
    return (rng.standard_normal((*batch, m, rank)) @ rng.standard_normal((*batch, rank, n))).astype(np.float64)


@pytest.mark.parametrize("shape", [(40, 12), (12, 40), (3, 25, 9), (2, 9, 25)])
@pytest.mark.parametrize("M", [False, True])
def test_svd_lowrank_is_exact_below_rank_q(shape, M):
    a = low_rank(shape, 4)
    m = np.full(shape, 0.5) if M else None
    A = kindle.tensor(a + (m if M else 0))
    U, S, V = kindle.svd_lowrank(A, q=6, M=kindle.tensor(m) if M else None)
    q = min(6, *shape[-2:])
    assert tuple(U.shape) == (*shape[:-2], shape[-2], q) and tuple(V.shape) == (*shape[:-2], shape[-1], q)
    rebuilt = (U @ kindle.diag_embed(S) @ V.mT).numpy()
    np.testing.assert_allclose(rebuilt, a, atol=1e-8)
    tS = torch.svd_lowrank(torch.tensor(a), q=6)[1].numpy()
    np.testing.assert_allclose(S.numpy()[..., :4], tS[..., :4], rtol=1e-8)


def test_pca_lowrank_matches_torch_components():
    a = low_rank((60, 10), 3, seed=1) + 2.0
    U, S, V = kindle.pca_lowrank(kindle.tensor(a), q=3)
    tU, tS, tV = torch.pca_lowrank(torch.tensor(a), q=3)
    np.testing.assert_allclose(S.numpy(), tS.numpy(), rtol=1e-8)
    np.testing.assert_allclose(np.abs(V.numpy().T @ tV.numpy()), np.eye(3), atol=1e-8)  # same directions
    assert kindle.pca_lowrank(kindle.tensor(a))[1].shape == (6,)


def test_gradients_flow_through_the_factors():
    A = kindle.tensor(low_rank((8, 5), 5), requires_grad=True)
    U, S, V = kindle.svd_lowrank(A, q=5)
    S.sum().backward()
    assert A.grad is not None and A.grad.shape == A.shape
    # d(nuclear norm)/dA = U V^T for a full-rank matrix
    np.testing.assert_allclose(A.grad.numpy(), (U @ V.mT).detach().numpy(), atol=1e-8)


@pytest.mark.parametrize("call", [
    lambda L, A: L.pca_lowrank(A, q=20), lambda L, A: L.pca_lowrank(A, q=-1), lambda L, A: L.pca_lowrank(A, niter=-1),
])
def test_errors_match_torch(call):
    a = np.ones((5, 4))
    with pytest.raises(Exception) as kt:
        call(kindle, kindle.tensor(a))
    with pytest.raises(Exception) as tt:
        call(torch, torch.tensor(a))
    assert type(kt.value) is type(tt.value)
