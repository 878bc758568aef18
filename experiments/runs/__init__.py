"""One module per experiment of spec/EXPERIMENTS.md."""
