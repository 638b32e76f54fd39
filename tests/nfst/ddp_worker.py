"""Run by tests/nfst/test_distributed.py under torchrun: DDP sampler training on 2 CPU ranks."""

import sys

import torch
import torch.distributed as dist
from fsts import deletion_insertion
from nfst import compile_lattice
from nfst.samplers import make_sampler, SamplerConfig
from nfst.scorer import ArcFactoredScorer
from nfst.training import SamplerTrainConfig, train_sampler
dist.init_process_group("gloo")
T = deletion_insertion("ab", "cd")
lats = [compile_lattice(T, x, y) for x, y in [("ab", "c"), ("ba", "dc"), ("a", "cd"), ("b", "d")]]
torch.manual_seed(0)
scorer = ArcFactoredScorer(torch.randn(len(lats[0].mark_vocab) + 1))
torch.manual_seed(1)
s = make_sampler("swa", len(lats[0].mark_vocab), SamplerConfig(d=8, dropout=0.0), "abcd")
cfg = SamplerTrainConfig(sampler=SamplerConfig(d=8, dropout=0.0), lr=1e-2, steps=6, batch_size=4, k=4, eval_every=3)
r = train_sampler(s, scorer, lats, lats, cfg, quiet=True)
flat = torch.cat([p.detach().flatten() for p in r.sampler.parameters()])
out = [torch.zeros_like(flat) for _ in range(dist.get_world_size())]
dist.all_gather(out, flat)
assert all(torch.equal(out[0], o) for o in out), "parameters differ across ranks"
assert len({round(h["loss"], 6) for h in r.history}) > 1
sys.stdout.write(f"rank {dist.get_rank()} ok\n")  # one write: ranks share the pipe
sys.stdout.flush()
dist.destroy_process_group()
