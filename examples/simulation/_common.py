"""What every example script shares: its command line, the backend by name, the loss plot and
the GIF of its frames. Works with fieldsim and, for cross-checks, with Taichi imported in its
place (`import taichi as ti` in the scripts): `frames_to_gif` then falls back to Pillow.
"""
import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

try:
    from fieldsim.gui import frames_to_gif
except ImportError:  # running under plain Taichi: a tiny Pillow fallback
    def frames_to_gif(paths, out_path, fps=20):
        from PIL import Image
        ims = [Image.open(p).convert("RGB") for p in paths]
        ims[0].save(out_path, save_all=True, append_images=ims[1:],
                    duration=int(1000 / fps), loop=0)
        return out_path

__all__ = ["arch", "example_parser", "frames_to_gif", "plot_loss"]


def arch(ti, name):
    """`ti.cpu` / `ti.cuda` / `ti.gpu` from the `--arch` option."""
    return {"cpu": ti.cpu, "cuda": ti.cuda, "gpu": ti.gpu}[name]


def example_parser(doc, name, lr=None):
    """The options every example takes (`--out`, `--quick`, `--arch`, `--seed`), and for an
    optimisation example (`lr` given) `--iters`, `--steps` and `--lr`."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", default=os.path.join("out", name))
    ap.add_argument("--quick", action="store_true", help="tiny run for tests")
    if lr is not None:
        ap.add_argument("--iters", type=int, default=None)
        ap.add_argument("--steps", type=int, default=None)
        ap.add_argument("--lr", type=float, default=lr)
    ap.add_argument("--arch", default="cpu", choices=["cpu", "cuda", "gpu"])
    ap.add_argument("--seed", type=int, default=0)
    return ap


def plot_loss(losses, out_dir, ylabel, title, log=False):
    """The loss curve as `out_dir/loss.png`; returns its path."""
    plt.figure(figsize=(5, 3.5))
    style = "o-" if len(losses) < 40 else "-"
    (plt.semilogy if log else plt.plot)(losses, style)
    plt.xlabel("iteration")
    plt.ylabel(ylabel)
    plt.title(title)
    plt.tight_layout()
    path = os.path.join(out_dir, "loss.png")
    plt.savefig(path, dpi=100)
    plt.close()
    return path
