"""Train a minigrad model data-parallel on PyTorch's distributed engine (`minigrad train gpt
--engine torch --nproc 2`) and write an ordinary minigrad checkpoint and log.csv.

Every process exports the same model with `to_torch`, wraps it in DistributedDataParallel
(gloo on CPU, NCCL when there is a GPU for each process) and trains it on its own slice of the
global batch: each process draws the same global batch from the same data generator and keeps
rows [rank * B/N, (rank + 1) * B/N), so N processes see exactly the batches of one process and
the averaged gradient is the gradient of the global batch's mean loss (exactly so when every
slice holds as many counted items; a loss that skips padding tokens, with more padding in one
slice than another, weights the tokens of the slices a little differently). Everything else is the
default loop's (models/train.py): AdamW with weight decay on matrices only, warmup + cosine,
gradient clipping, evaluation by the recipe's own (minigrad) `evaluate` every eval_every steps.

The checkpoint is the default loop's: the weights come back with `state_dict_from_torch` and
torch's AdamW moments become minigrad's optimizer state, so `--resume` continues exactly with
either engine. One thing a checkpoint does not hold is torch's random state: with dropout, a
resumed run draws other dropout masks than an uninterrupted one (the GPT presets use none).
"""

from __future__ import annotations

import inspect
import os
import signal
import socket
import threading
import time
from dataclasses import asdict
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from tqdm import tqdm

import minigrad as mg
from minigrad.models.recipes import recipe_class
from minigrad.models.train import (
    TrainConfig,
    TrainingInterrupted,
    _CtrlC,
    _log_step,
    _start_log,
    make_optimizer,
    read_checkpoint,
    save_checkpoint,
)
from minigrad.optim import Optimizer, unflatten_state
from minigrad.random import set_rng_state

from .module import to_torch
from .state import state_dict_from_torch


def train_distributed(recipe: Any, cfg: TrainConfig, out_dir: str, nproc: int = 1,
                      resume: str | None = None, progress: bool = True, threads: int = 1,
                      log: Any = tqdm.write) -> dict:
    """Train `recipe.model` with torch over `nproc` processes; like `models.train.train`.

    Args:
        recipe: a recipe (models/recipes) whose batches are tuples of tensors.
        cfg: the training settings; cfg.batch_size is the global batch, split evenly.
        out_dir: folder for checkpoint.npz and log.csv (the default loop's formats).
        nproc: processes; 1 trains in this process with no process group.
        resume: a checkpoint (or run folder) of either engine to continue from.
        progress: show a progress bar (process 0 only).
        threads: torch threads per process (1 suits a small model on a few cores).

    Returns:
        The last evaluation metrics, as `train` returns them.

    Raises:
        TrainingInterrupted: Ctrl-C stopped every process at the same step after process 0
            saved a checkpoint.
    """
    if cfg.steps < 1:
        raise ValueError(f"train: steps must be positive, got {cfg.steps}")
    if nproc < 1:
        raise ValueError(f"--nproc must be positive, got {nproc}")
    if cfg.batch_size % nproc:
        raise ValueError(f"the batch of {cfg.batch_size} does not split evenly over {nproc} processes; "
                         f"choose --nproc dividing {cfg.batch_size}")
    if resume:  # checked here, before any process starts or out_dir is touched
        meta = read_checkpoint(resume)[0]
        if meta["step"] >= cfg.steps:
            raise ValueError(f"train: the checkpoint is at step {meta['step']}, so {cfg.steps} steps "
                             "leave nothing to train; ask for more steps")
    if not isinstance(recipe.batch("train", np.random.default_rng(0), nproc), tuple):
        raise ValueError(f"the torch engine needs batches that are tuples of tensors; "
                         f"{recipe.name}'s are not")
    os.makedirs(out_dir, exist_ok=True)
    job = dict(cfg=asdict(cfg), out_dir=out_dir, resume=resume, progress=progress, threads=threads, log=log)
    if nproc == 1:
        with _CtrlC() as interrupted:
            result = _train(0, 1, recipe, job, interrupted)
    else:
        job.update(name=recipe.name, meta=recipe.meta(), weights=recipe.model.state_dict(),
                   init=f"tcp://127.0.0.1:{_free_port()}", log=None)
        ctx = mp.get_context("spawn")
        results = ctx.SimpleQueue()
        # Children read OMP_NUM_THREADS when they import numpy and torch, before any of our code.
        saved = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        os.environ.update({k: str(threads) for k in saved})
        # Ctrl-C reaches every process of the terminal's group. The children stop together and
        # save; this process waits for them. Ignored here, it is also ignored by the children
        # until they can handle it (Python installs KeyboardInterrupt only where SIGINT is not
        # ignored), so a Ctrl-C while they import torch cannot leave half of them running.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
        try:
            procs = mp.spawn(_spawned, args=(nproc, job, results), nprocs=nproc, join=False)
            while not procs.join():
                pass
        finally:
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
        # The trained weights live in the checkpoint process 0 wrote; the caller's model gets them.
        recipe.model.load_state_dict(read_checkpoint(os.path.join(out_dir, "checkpoint.npz"))[1])
    if result["interrupted"] is not None:
        raise TrainingInterrupted(result["interrupted"], os.path.join(out_dir, "checkpoint.npz"))
    return result["metrics"]


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()  # signals are set there only


def _free_port() -> int:
    """A TCP port free on the loopback interface (the processes only ever talk over 127.0.0.1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawned(rank: int, world: int, job: dict, results: Any) -> None:
    """Entry point of a spawned process: rebuild the recipe, join the group, train.

    Ctrl-C is caught from here on, so a process being set up does not die while the others wait
    for it: they all stop together after the first step instead."""
    with _CtrlC() as interrupted:
        recipe = recipe_class(job["name"]).from_meta(job["meta"])
        recipe.model.load_state_dict(job["weights"])
        cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world
        dist.init_process_group("nccl" if cuda else "gloo", init_method=job["init"], rank=rank,
                                world_size=world)
        try:
            result = _train(rank, world, recipe, job, interrupted)
            if rank == 0:
                results.put(result)
        finally:
            dist.destroy_process_group()


# ----------------------------------------------------------------------------- one process


def _train(rank: int, world: int, recipe: Any, job: dict, interrupted: Any) -> dict:
    """The training loop of one process (of `world`); process 0 logs, evaluates and saves.
    `interrupted.flag` turns True on Ctrl-C (the caller has the catcher active)."""
    cfg = TrainConfig.from_dict(job["cfg"])
    torch.set_num_threads(job["threads"])
    mg.set_num_threads(job["threads"])
    device = torch.device("cuda", rank) if world > 1 and dist.get_backend() == "nccl" else torch.device("cpu")
    say = job["log"] or tqdm.write  # spawned processes print to the terminal they share

    # minigrad's optimizer and schedule: the schedule sets the lr of every step, and at each
    # checkpoint torch's AdamW state is copied into the optimizer so the file is the default's.
    mg.manual_seed(cfg.seed)
    data_rng = np.random.default_rng(cfg.seed + 1)
    opt, sched = make_optimizer(recipe.model, cfg)
    start, history, seconds = 0, [], 0.0
    if job["resume"]:
        meta, model_state, opt_state = read_checkpoint(job["resume"])
        recipe.model.load_state_dict(model_state)
        opt.load_state_dict(unflatten_state(opt_state))
        sched.load_state_dict(meta["sched"])
        set_rng_state(meta["rng"])
        data_rng.bit_generator.state = meta["data_rng"]
        start, history, seconds = meta["step"], meta["history"], meta.get("seconds", 0.0)
    torch.manual_seed(cfg.seed * 1009 + start * 31 + rank)  # dropout masks: each process its own

    per_rank = cfg.batch_size // world
    example = recipe.batch("train", np.random.default_rng(0), per_rank)  # fixes the shapes only
    shapes = _PerShape(recipe, example, device)
    net = shapes.main  # the exported loss whose parameters every export shares
    params = _torch_params(net, recipe.model, opt)
    topt = _torch_adamw(opt, params, device)
    # DDP averages the gradients over the processes during backward; the exported constants
    # (causal masks, positions) are the same everywhere, so buffers are not broadcast.
    model = shapes if world == 1 else _ddp(shapes, device)

    ckpt_path = os.path.join(job["out_dir"], "checkpoint.npz")
    log_path = os.path.join(job["out_dir"], "log.csv")
    if rank == 0:
        _start_log(log_path, keep_until=start)
    metrics: dict = history[-1] if history else {}
    bar = tqdm(range(start, cfg.steps), initial=start, total=cfg.steps,
               disable=rank > 0 or not job["progress"], desc=f"train {recipe.name} (torch x{world})",
               unit="step", dynamic_ncols=True)
    t0 = time.perf_counter() - seconds
    stop = False

    def save(step: int) -> None:
        _back_to_minigrad(net, topt, params, recipe.model, opt)
        save_checkpoint(ckpt_path, recipe, opt, sched, step, cfg, data_rng, history,
                        seconds=time.perf_counter() - t0)

    for step in bar:
        if stop or (world == 1 and interrupted.flag):  # every process stops at the same step
            bar.close()
            if rank == 0:
                save(step)
            return {"metrics": metrics, "interrupted": step}
        batch = recipe.batch("train", data_rng, cfg.batch_size)  # the global batch
        shard = [torch.from_numpy(np.ascontiguousarray(t.data[rank * per_rank:(rank + 1) * per_rank]))
                 .to(device) for t in batch]
        loss = model(*shard)
        topt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.grad_clip)
        topt.step()
        sched.step()
        for group, lr in zip(topt.param_groups, sched.get_last_lr()):
            group["lr"] = lr
        value = loss.item()
        if world > 1:  # the global batch's mean loss, and whether anyone was interrupted
            both = torch.tensor([value, float(interrupted.flag)], dtype=torch.float64, device=device)
            dist.all_reduce(both)
            value, stop = both[0].item() / world, both[1].item() > 0
        lr, done = sched.get_last_lr()[0], step + 1
        if rank:
            continue
        bar.set_postfix(loss=f"{value:.3f}", lr=f"{lr:.1e}")
        evaluated = _log_step(log_path, done, value, lr, time.perf_counter() - t0, cfg, recipe, history, say,
                              before_eval=lambda: recipe.model.load_state_dict(
                                  state_dict_from_torch(net.state_dict(), recipe.model)))
        if evaluated is not None:
            metrics = evaluated
            save(done)
    bar.close()
    return {"metrics": metrics, "interrupted": None}


class _PerShape(torch.nn.Module):
    """The recipe's loss exported once per input shape: an export fixes every dimension but the
    batch, and some recipes pad each batch to its longest sequence. Every export uses the
    parameters of the first (`main`), so there is one set of weights to train and average."""

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
    """Copy the torch weights into the minigrad model and torch's AdamW moments into `opt`
    (whose lr the shared schedule already set), for a checkpoint in the default format."""
    model.load_state_dict(state_dict_from_torch(net.state_dict(), model))
    for index, p in enumerate(params):
        state = topt.state.get(p)
        if state:
            opt.state[index] = {"step": int(state["step"].item()),
                                "exp_avg": state["exp_avg"].detach().cpu().numpy().copy(),
                                "exp_avg_sq": state["exp_avg_sq"].detach().cpu().numpy().copy()}
