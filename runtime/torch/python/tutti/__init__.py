"""tutti: an allreduce runtime. `import tutti.torch` registers backend "tutti" for
torch.distributed."""
