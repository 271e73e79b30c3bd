"""One GPT block, written the way nanoGPT (karpathy/nanoGPT, model.py) writes it: pre-norm,
causal self-attention through F.scaled_dot_product_attention(is_causal=True) with a fused qkv
projection ("c_attn"), and a 4x MLP with GELU; LayerNorm with an optional bias as nanoGPT's.
GPT-2 small's sizes: n_embd 768, 12 heads. Initialisation as nanoGPT's (normal 0.02, the
residual projections scaled by 1/sqrt(2 * n_layer) with n_layer 12).

The model is the block alone: input (batch, seq, n_embd) activations, output the same shape.
"""
import math


def build(lib, n_embd=768, n_head=12, dropout=0.0, bias=True, n_layer_for_init=12):
    nn, F = lib.nn, lib.nn.functional

    class LayerNorm(nn.Module):
        """LayerNorm with an optional bias (torch's LayerNorm has no bias=False before 2.1)."""

        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(lib.ones(ndim))
            self.bias = nn.Parameter(lib.zeros(ndim)) if bias else None

        def forward(self, input):
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            assert n_embd % n_head == 0
            self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)  # q, k, v for all heads
            self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
            self.attn_dropout = nn.Dropout(dropout)
            self.resid_dropout = nn.Dropout(dropout)
            self.n_head, self.n_embd, self.dropout = n_head, n_embd, dropout

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                               dropout_p=self.dropout if self.training else 0,
                                               is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble the heads
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = LayerNorm(n_embd, bias=bias)
            self.attn = CausalSelfAttention()
            self.ln_2 = LayerNorm(n_embd, bias=bias)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlp(self.ln_2(x))
            return x

    block = Block()
    for pn, p in block.named_parameters():
        if pn.endswith("c_proj.weight"):
            nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer_for_init))
        elif pn.endswith(".weight") and p.dim() == 2:
            nn.init.normal_(p, mean=0.0, std=0.02)
        elif "c_" in pn and pn.endswith(".bias"):
            nn.init.zeros_(p)
    return block
