"""A tiny Vision Transformer, written the way torchvision.models.vision_transformer writes
ViT: a strided convolution as the patch embedding ("conv_proj"), a learned class token and
position embedding, pre-norm encoder blocks (LayerNorm, nn.MultiheadAttention with
batch_first=True, dropout, residual; LayerNorm, MLP with GELU, residual), a final LayerNorm and a
linear head on the class token. Sizes of a "ViT-Tiny": hidden 192, 3 heads, MLP 768; 4 layers.
"""
import math


def build(lib, image_size=224, patch_size=16, num_layers=4, num_heads=3, hidden_dim=192,
          mlp_dim=768, dropout=0.0, attention_dropout=0.0, num_classes=1000):
    nn = lib.nn

    class MLPBlock(nn.Sequential):
        def __init__(self, in_dim, mlp_dim, dropout):
            super().__init__(nn.Linear(in_dim, mlp_dim), nn.GELU(), nn.Dropout(dropout),
                             nn.Linear(mlp_dim, in_dim), nn.Dropout(dropout))
            for m in self.modules():
                if isinstance(m, nn.Linear):
                    nn.init.xavier_uniform_(m.weight)
                    nn.init.normal_(m.bias, std=1e-6)

    class EncoderBlock(nn.Module):
        def __init__(self, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout):
            super().__init__()
            self.ln_1 = nn.LayerNorm(hidden_dim, eps=1e-6)
            self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout,
                                                        batch_first=True)
            self.dropout = nn.Dropout(dropout)
            self.ln_2 = nn.LayerNorm(hidden_dim, eps=1e-6)
            self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

        def forward(self, input):
            x = self.ln_1(input)
            x, _ = self.self_attention(x, x, x, need_weights=False)
            x = self.dropout(x)
            x = x + input
            y = self.mlp(self.ln_2(x))
            return x + y

    class Encoder(nn.Module):
        def __init__(self, seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout):
            super().__init__()
            self.pos_embedding = nn.Parameter(lib.empty(1, seq_length, hidden_dim).normal_(std=0.02))
            self.dropout = nn.Dropout(dropout)
            self.layers = nn.Sequential(*[EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout)
                                          for _ in range(num_layers)])
            self.ln = nn.LayerNorm(hidden_dim, eps=1e-6)

        def forward(self, input):
            input = input + self.pos_embedding
            return self.ln(self.layers(self.dropout(input)))

    class VisionTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.image_size, self.patch_size, self.hidden_dim = image_size, patch_size, hidden_dim
            self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
            seq_length = (image_size // patch_size) ** 2 + 1  # + the class token
            self.class_token = nn.Parameter(lib.zeros(1, 1, hidden_dim))
            self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout,
                                   attention_dropout)
            self.heads = nn.Sequential()
            self.heads.add_module("head", nn.Linear(hidden_dim, num_classes))

            fan_in = self.conv_proj.in_channels * self.conv_proj.kernel_size[0] * self.conv_proj.kernel_size[1]
            nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
            nn.init.zeros_(self.conv_proj.bias)
            # torchvision zero-initialises the head; small random weights keep the outputs (and the
            # comparison of the two libraries) meaningful.
            nn.init.normal_(self.heads.head.weight, std=0.02)
            nn.init.zeros_(self.heads.head.bias)

        def _process_input(self, x):
            n, c, h, w = x.shape
            p = self.patch_size
            n_h, n_w = h // p, w // p
            x = self.conv_proj(x)                           # (n, hidden, n_h, n_w)
            x = x.reshape(n, self.hidden_dim, n_h * n_w)
            return x.permute(0, 2, 1)                       # (n, seq, hidden)

        def forward(self, x):
            x = self._process_input(x)
            n = x.shape[0]
            batch_class_token = self.class_token.expand(n, -1, -1)
            x = lib.cat([batch_class_token, x], dim=1)
            x = self.encoder(x)
            return self.heads(x[:, 0])

    return VisionTransformer()
