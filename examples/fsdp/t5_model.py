"""A small T5-like encoder for the FSDP examples and checks: token embedding, blocks of causal
self-attention and a ReLU MLP (each pre-normed and residual), a final norm and a vocabulary head.
Sized for CPUs (dim 64, 2 blocks, vocab 512) unless told otherwise.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim, heads, ff):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim, bias=False)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.norm2 = nn.LayerNorm(dim, bias=False)
        self.ff_in = nn.Linear(dim, ff, bias=False)
        self.ff_out = nn.Linear(ff, dim, bias=False)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        attn = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                              v.transpose(1, 2), is_causal=True)
        x = x + self.out(attn.transpose(1, 2).reshape(b, s, d))
        return x + self.ff_out(F.relu(self.ff_in(self.norm2(x))))


class TinyT5(nn.Module):
    def __init__(self, vocab=512, dim=64, heads=4, ff=256, layers=2):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, ff) for _ in range(layers))
        self.norm = nn.LayerNorm(dim, bias=False)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def batch(step, rank, vocab=512, batch_size=8, seq=32):
    """Rank `rank`'s batch of step `step`: next-token pairs of a seeded random sequence, the same on
    every run, different on every rank."""
    g = torch.Generator().manual_seed(1000 * step + rank)
    tokens = torch.randint(0, vocab, (batch_size, seq + 1), generator=g)
    return tokens[:, :-1], tokens[:, 1:]
