"""Train a minigrad model data-parallel on PyTorch's distributed engine (`minigrad train gpt
--engine torch --nproc 2`) and write an ordinary minigrad checkpoint and log.csv.

`TorchEngine` plugs into minigrad's own training loop (models/train.py, `train(...,
engine=TorchEngine(nproc))`), which keeps resume, log.csv, evaluation, checkpoints, the run
lock and Ctrl-C; this module holds only what is torch's: exporting the model, the processes
and DDP, the step, and bringing the weights and optimizer state back.

Every process exports the same model with `to_torch`, wraps it in DistributedDataParallel
(gloo on CPU, NCCL when there is a GPU for each process) and trains it on its own slice of the
global batch: each process draws the same global batch from the same data generator and keeps
rows [rank * B/N, (rank + 1) * B/N), so N processes see exactly the batches of one process and
the averaged gradient is the gradient of the global batch's mean loss (exactly so when every
slice holds as many counted items; a loss that skips padding tokens, with more padding in one
slice than another, weights the tokens of the slices a little differently). The optimizer is
torch's AdamW with minigrad's groups (weight decay on matrices only), its lr set by the loop's
warmup + cosine schedule; evaluation is the recipe's own (minigrad) `evaluate`.

The checkpoint is the default loop's: the weights come back with `state_dict_from_torch` and
torch's AdamW moments become minigrad's optimizer state, so `--resume` continues exactly with
either engine. One thing a checkpoint does not hold is torch's random state: with dropout, a
resumed run draws other dropout masks than an uninterrupted one (the GPT presets use none).
"""

from __future__ import annotations

import inspect
import os
import shutil
import signal
import tempfile
import threading
from dataclasses import asdict
from typing import Any, Callable

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from tqdm import tqdm

import minigrad as mg
from minigrad.models.recipes import recipe_class
from minigrad.models.runs import StopOnCtrlC, read_checkpoint
from minigrad.models.train import Engine, TrainConfig, TrainingInterrupted, train, train_steps
from minigrad.optim import Optimizer

from .module import to_torch
from .state import state_dict_from_torch


def train_distributed(recipe: Any, cfg: TrainConfig, out_dir: str, nproc: int = 1,
                      resume: str | None = None, progress: bool = True, threads: int = 1,
                      log: Any = tqdm.write, overwrite: bool = False) -> dict:
    """Train `recipe.model` with torch over `nproc` processes: `models.train.train` with a
    `TorchEngine(nproc, threads)`, and the same arguments, files, return value and
    `TrainingInterrupted` on Ctrl-C (every process stops at the same step after process 0 saved).
    cfg.batch_size is the global batch, split evenly over the processes."""
    return train(recipe, cfg, out_dir, resume=resume, progress=progress, log=log, overwrite=overwrite,
                 engine=TorchEngine(nproc=nproc, threads=threads))


class TorchEngine(Engine):
    """The torch engine of `models.train.train`: exports the model and trains it with torch's
    AdamW, in this process (nproc=1) or in `nproc` processes started here, DDP averaging the
    gradients. `threads`: torch threads per process (1 suits a small model on a few cores)."""

    def __init__(self, nproc: int = 1, threads: int = 1):
        if nproc < 1:
            raise ValueError(f"--nproc must be positive, got {nproc}")
        self.nproc, self.threads = nproc, threads

    def check(self, recipe: Any, cfg: TrainConfig) -> None:
        if cfg.batch_size % self.nproc:
            raise ValueError(f"the batch of {cfg.batch_size} does not split evenly over {self.nproc} "
                             f"processes; choose --nproc dividing {cfg.batch_size}")
        if not isinstance(recipe.batch("train", np.random.default_rng(0), self.nproc), tuple):
            raise ValueError(f"the torch engine needs batches that are tuples of tensors; "
                             f"{recipe.name}'s are not")

    def run(self, recipe: Any, cfg: TrainConfig, out_dir: str, resume: str | None, progress: bool,
            log: Callable[[str], Any]) -> dict:
        if self.nproc == 1:
            return train_steps(recipe, cfg, out_dir, TorchProcess(0, 1, self.threads), resume=resume,
                               progress=progress, log=log)
        job = dict(cfg=asdict(cfg), out_dir=out_dir, resume=resume, progress=progress, threads=self.threads,
                   name=recipe.name, meta=recipe.meta(), weights=recipe.model.state_dict(),
                   init=None)
        ctx = mp.get_context("spawn")
        results = ctx.SimpleQueue()
        # Children read OMP_NUM_THREADS when they import numpy and torch, before any of our code.
        saved = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        os.environ.update({k: str(self.threads) for k in saved})
        # Ctrl-C reaches every process of the terminal's group. The children stop together and
        # save; this process waits for them. Ignored here, it is also ignored by the children
        # until they can handle it (Python installs KeyboardInterrupt only where SIGINT is not
        # ignored), so a Ctrl-C while they import torch cannot leave half of them running.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
        # The processes meet at a file, not a TCP port: a port chosen free here can be taken by
        # another program before the children bind it.
        meeting = tempfile.mkdtemp(prefix="minigrad-ddp-")
        job["init"] = "file://" + os.path.join(meeting, "rendezvous")
        try:
            procs = mp.spawn(_spawned, args=(self.nproc, job, results), nprocs=self.nproc, join=False)
            while not procs.join():
                pass
        finally:
            shutil.rmtree(meeting, ignore_errors=True)
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        if results.empty():  # torch's spawn wrapper ends a process quietly on KeyboardInterrupt
            raise KeyboardInterrupt
        result = results.get()
        ckpt_path = os.path.join(out_dir, "checkpoint.npz")
        # The trained weights live in the checkpoint process 0 wrote; the caller's model gets them.
        recipe.model.load_state_dict(read_checkpoint(ckpt_path)[1])
        if result["interrupted"] is not None:
            raise TrainingInterrupted(result["interrupted"], ckpt_path)
        return result["metrics"]


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()  # signals are set there only


def _spawned(rank: int, world: int, job: dict, results: Any) -> None:
    """Entry point of a spawned process: rebuild the recipe, join the group, run the loop.

    Ctrl-C is caught from here on, so a process being set up does not die while the others wait
    for it: they all stop together at the first step instead."""
    with StopOnCtrlC() as interrupted:
        recipe = recipe_class(job["name"]).from_meta(job["meta"])
        recipe.model.load_state_dict(job["weights"])
        cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world
        dist.init_process_group("nccl" if cuda else "gloo", init_method=job["init"], rank=rank,
                                world_size=world)
        try:
            try:
                metrics = train_steps(recipe, TrainConfig.from_dict(job["cfg"]), job["out_dir"],
                                      TorchProcess(rank, world, job["threads"]), resume=job["resume"],
                                      progress=job["progress"], log=tqdm.write, interrupted=interrupted)
                result = {"metrics": metrics, "interrupted": None}
            except TrainingInterrupted as stop:
                result = {"metrics": {}, "interrupted": stop.step}
            if rank == 0:
                results.put(result)
            # Leave together: a process that tears its group down while another still talks to
            # it can abort the other (gloo raises in a thread of its own, which ends the process).
            dist.barrier()
        finally:
            dist.destroy_process_group()


# ----------------------------------------------------------------------------- one process


class TorchProcess(Engine):
    """The steps of one process (of `world`) of the torch engine; process 0 is the loop's
    leader (it logs, evaluates and saves)."""

    def __init__(self, rank: int, world: int, threads: int = 1):
        self.rank, self.world, self.threads = rank, world, threads
        self.leader, self.label = rank == 0, f" (torch x{world})"

    def setup(self, recipe: Any, opt: Optimizer, cfg: TrainConfig, start: int) -> None:
        """Export the model (once per batch shape), make torch's AdamW from `opt` (its groups,
        lr and moments, so a resumed run goes on exactly) and wrap it all in DDP."""
        torch.set_num_threads(self.threads)
        mg.set_num_threads(self.threads)
        multi = self.world > 1 and dist.get_backend() == "nccl"
        self.device = torch.device("cuda", self.rank) if multi else torch.device("cpu")
        torch.manual_seed(cfg.seed * 1009 + start * 31 + self.rank)  # dropout masks: each process its own
        self.recipe, self.opt, self.cfg = recipe, opt, cfg
        self.per_rank = cfg.batch_size // self.world
        example = recipe.batch("train", np.random.default_rng(0), self.per_rank)  # fixes the shapes only
        shapes = _PerShape(recipe, example, self.device)
        self.net = shapes.main  # the exported loss whose parameters every export shares
        self.params = _torch_params(self.net, recipe.model, opt)
        self.topt = _torch_adamw(opt, self.params, self.device)
        # DDP averages the gradients over the processes during backward. Buffers are not
        # broadcast: the exported constants (causal masks, positions) are the same everywhere,
        # and batch norm's running statistics are each process's own, of its slice of the batch
        # (as torch's BatchNorm under DDP); process 0's are the ones saved.
        self.model = shapes if self.world == 1 else _ddp(shapes, self.device)

    def stopping(self, pressed: bool) -> bool:
        if self.world == 1:
            return pressed
        anyone = torch.tensor([float(pressed)], dtype=torch.float64, device=self.device)
        dist.all_reduce(anyone)  # every process stops at the same step
        return anyone.item() > 0

    def step(self, batch: tuple) -> float:
        for group, ours in zip(self.topt.param_groups, self.opt.param_groups):
            group["lr"] = ours["lr"]  # the loop's schedule set it
        lo, hi = self.rank * self.per_rank, (self.rank + 1) * self.per_rank
        shard = [torch.from_numpy(np.ascontiguousarray(t._data[lo:hi])).to(self.device) for t in batch]
        loss = self.model(*shard)
        self.topt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.net.parameters(), self.cfg.grad_clip)
        self.topt.step()
        if self.world == 1:
            return loss.item()
        total = loss.detach().to(torch.float64).reshape(1)
        dist.all_reduce(total)  # the global batch's mean loss
        return total.item() / self.world

    def sync(self) -> None:
        _back_to_minigrad(self.net, self.topt, self.params, self.recipe.model, self.opt)


class _PerShape(torch.nn.Module):
    """The recipe's loss exported once per input shape: an export fixes every dimension but the
    batch, and some recipes pad each batch to its longest sequence. Every export uses the
    parameters and the model's buffers of the first (`main`), so there is one set of weights
    (and of running statistics) to train, average and save."""

    def __init__(self, recipe: Any, example: tuple, device: torch.device):
        super().__init__()
        self.recipe, self.device = recipe, device
        self.main = self._export(example)
        self._others: dict[tuple, torch.nn.Module] = {self._key(example): self.main}  # not submodules

    @staticmethod
    def _key(xs: Any) -> tuple:
        return tuple(tuple(x.shape[1:]) for x in xs)

    def _export(self, xs: Any) -> torch.nn.Module:
        return to_torch(self.recipe.model, *xs, method=lambda model, *b: self.recipe.loss(b)).to(self.device)

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        net = self._others.get(self._key(xs))
        if net is None:  # traced with the minigrad model (its weights do not matter), then rebound
            net = self._export([x.detach().cpu().numpy() for x in xs])
            for name, p in self.main.named_parameters():
                owner, _, leaf = name.rpartition(".")
                net.get_submodule(owner)._parameters[leaf] = p
            for name in self.main.buffer_names:
                owner, _, leaf = name.rpartition(".")
                net.get_submodule(owner)._buffers[leaf] = self.main.get_buffer(name)
            self._others[self._key(xs)] = net
        net.train(self.training)
        return net(*xs)


def _ddp(net: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    ddp = torch.nn.parallel.DistributedDataParallel
    # Newer torch renamed the switch (and deprecates the old name); both mean: no broadcast per step.
    sync = "forward_sync_buffers" if "forward_sync_buffers" in inspect.signature(ddp).parameters \
        else "broadcast_buffers"
    return ddp(net, device_ids=[device.index] if device.type == "cuda" else None, **{sync: False})


# ----------------------------------------------------------------------------- the optimizer


def _torch_params(net: torch.nn.Module, model: Any, opt: Optimizer) -> list[torch.nn.Parameter]:
    """The torch parameters in the order of minigrad's optimizer indices (group by group)."""
    by_name = dict(net.named_parameters())
    name_of = {id(p): n for n, p in model.named_parameters()}
    return [by_name[name_of[id(p)]] for group in opt.param_groups for p in group["params"]]


def _torch_adamw(opt: Optimizer, params: list, device: torch.device) -> torch.optim.AdamW:
    """torch's AdamW with minigrad's groups, hyperparameters, current lr and state.

    Both apply the same rule (decoupled decay p *= 1 - lr * wd, then the bias-corrected Adam
    step with eps added to sqrt(v) / sqrt(1 - beta2^t)), so the moments move across as they are.
    """
    groups, i = [], 0
    for group in opt.param_groups:
        n = len(group["params"])
        groups.append({"params": params[i:i + n], "lr": group["lr"], "betas": group["betas"],
                       "eps": group["eps"], "weight_decay": group["weight_decay"]})
        i += n
    topt = torch.optim.AdamW(groups)
    for index, state in opt.state.items():
        topt.state[params[index]] = {
            "step": torch.tensor(float(state["step"])),
            "exp_avg": torch.from_numpy(np.array(state["exp_avg"])).to(device),
            "exp_avg_sq": torch.from_numpy(np.array(state["exp_avg_sq"])).to(device),
        }
    return topt


def _back_to_minigrad(net: torch.nn.Module, topt: torch.optim.AdamW, params: list, model: Any,
                      opt: Optimizer) -> None:
    """Copy the torch weights and buffers (the whole state dict) into the minigrad model and
    torch's AdamW moments into `opt` (whose lr the shared schedule already set), for a
    checkpoint in the default format."""
    model.load_state_dict(state_dict_from_torch(net.state_dict(), model))
    for index, p in enumerate(params):
        state = topt.state.get(p)
        if state:
            opt.state[index] = {"step": int(state["step"].item()),
                                "exp_avg": state["exp_avg"].detach().cpu().numpy().copy(),
                                "exp_avg_sq": state["exp_avg_sq"].detach().cpu().numpy().copy()}
