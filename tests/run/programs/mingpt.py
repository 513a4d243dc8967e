"""A GPT in the style of minGPT's model.py, trainer.py and its sorting demo, as a course hands
them out: CausalSelfAttention with a registered causal `bias` buffer and masked_fill on the
scores, a Block whose MLP is an nn.ModuleDict called through a lambda, GPT with an
nn.ModuleDict transformer reached by attributes, configure_optimizers sorting every parameter
into decay / no-decay by module type and parameter name, a Trainer with callbacks over a
DataLoader, and generate() with do_sample=False. tests/run/ runs it with torch and under
`minigrad run`.

    python mingpt.py INIT.npz STEPS     (INIT.npz: written with the initial weights if missing)

The DataLoader is built as the course builds it (shuffle, a seeded torch.Generator), but its
order is an explicit index list drawn with numpy: torch's randperm and minigrad's permutation
are different generators, so `shuffle=True` would feed the two runs different batches. The
list is the same for both, so the batches are too.

Prints the losses, the greedy sort of a held-out sequence, the parameter count, the final
weights' checksum and one parameter's first gradient as JSON."""

import json
import math
import os
import random
import sys
import time
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset


class CfgNode:
    """A bag of settings, reached by attributes (minGPT's utils.CfgNode, cut down)."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def merge_from_dict(self, d):
        self.__dict__.update(d)


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


# ----------------------------------------------------------------------------- model.py

class NewGELU(nn.Module):
    """GELU as in Google BERT and OpenAI GPT (the tanh approximation)."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    """Multi-head masked self-attention, written out (no fused kernel)."""

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        # key, query, value projections for all heads, in a batch
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        # causal mask: each position attends only to the positions before it
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))
        self.n_head = config.n_head
        self.n_embd = config.n_embd

    def forward(self, x):
        B, T, C = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # heads side by side again
        y = self.resid_dropout(self.c_proj(y))
        return y


class Block(nn.Module):
    """An unassuming Transformer block."""

    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.ModuleDict(dict(
            c_fc=nn.Linear(config.n_embd, 4 * config.n_embd),
            c_proj=nn.Linear(4 * config.n_embd, config.n_embd),
            act=NewGELU(),
            dropout=nn.Dropout(config.resid_pdrop),
        ))
        m = self.mlp
        self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))  # MLP forward

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlpf(self.ln_2(x))
        return x


class GPT(nn.Module):
    """GPT Language Model"""

    @staticmethod
    def get_default_config():
        return CfgNode(model_type=None, n_layer=None, n_head=None, n_embd=None, vocab_size=None,
                       block_size=None, embd_pdrop=0.1, resid_pdrop=0.1, attn_pdrop=0.1)

    def __init__(self, config):
        super().__init__()
        assert config.vocab_size is not None
        assert config.block_size is not None
        self.block_size = config.block_size

        type_given = config.model_type is not None
        params_given = all([config.n_layer is not None, config.n_head is not None, config.n_embd is not None])
        assert type_given ^ params_given  # exactly one of these (XOR)
        if type_given:  # translate from model_type to detailed configuration
            config.merge_from_dict({
                'gpt-nano': dict(n_layer=3, n_head=3, n_embd=48),
                'gpt-micro': dict(n_layer=4, n_head=4, n_embd=128),
            }[config.model_type])
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.embd_pdrop),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

        # init all weights, and apply a special scaled init to the residual projections (GPT-2)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

        # the number of parameters (not counting the decoder parameters in lm_head)
        self.n_params = sum(p.numel() for p in self.transformer.parameters())

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
        elif isinstance(module, nn.LayerNorm):
            torch.nn.init.zeros_(module.bias)
            torch.nn.init.ones_(module.weight)

    def configure_optimizers(self, train_config):
        """Every parameter goes in one of two sets: weight decay for the Linear weights, none for
        biases, LayerNorm and Embedding weights."""
        decay = set()
        no_decay = set()
        whitelist_weight_modules = (torch.nn.Linear, )
        blacklist_weight_modules = (torch.nn.LayerNorm, torch.nn.Embedding)
        for mn, m in self.named_modules():
            for pn, p in m.named_parameters():
                fpn = '%s.%s' % (mn, pn) if mn else pn  # full param name
                # named_modules and named_parameters are recursive: each parameter is seen by its
                # module and by every parent; the module type only matters for the direct parent
                if pn.endswith('bias'):
                    no_decay.add(fpn)
                elif pn.endswith('weight') and isinstance(m, whitelist_weight_modules):
                    decay.add(fpn)
                elif pn.endswith('weight') and isinstance(m, blacklist_weight_modules):
                    no_decay.add(fpn)

        param_dict = {pn: p for pn, p in self.named_parameters()}
        inter_params = decay & no_decay
        union_params = decay | no_decay
        assert len(inter_params) == 0, "parameters %s made it into both decay/no_decay sets!" % (str(inter_params), )
        assert len(param_dict.keys() - union_params) == 0, \
            "parameters %s were not separated into either decay/no_decay set!" % (str(param_dict.keys() - union_params), )

        optim_groups = [
            {"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": train_config.weight_decay},
            {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
        ]
        optimizer = torch.optim.AdamW(optim_groups, lr=train_config.learning_rate, betas=train_config.betas)
        return optimizer

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0)  # shape (1, t)

        tok_emb = self.transformer.wte(idx)  # (b, t, n_embd)
        pos_emb = self.transformer.wpe(pos)  # (1, t, n_embd)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)

        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
        """Take a conditioning sequence of indices idx (LongTensor of shape (b,t)) and complete
        the sequence max_new_tokens times, feeding the predictions back into the model."""
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, top_k)
                logits[logits < v[:, [-1]]] = -float('Inf')
            probs = F.softmax(logits, dim=-1)
            if do_sample:
                idx_next = torch.multinomial(probs, num_samples=1)
            else:
                _, idx_next = torch.topk(probs, k=1, dim=-1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


# ----------------------------------------------------------------------------- trainer.py

class Trainer:

    @staticmethod
    def get_default_config():
        return CfgNode(device='auto', num_workers=0, max_iters=None, batch_size=64, learning_rate=3e-4,
                       betas=(0.9, 0.95), weight_decay=0.1, grad_norm_clip=1.0)

    def __init__(self, config, model, train_dataset, order):
        self.config = config
        self.model = model
        self.optimizer = None
        self.train_dataset = train_dataset
        self.order = order
        self.callbacks = defaultdict(list)
        if config.device == 'auto':
            self.device = 'cuda' if torch.cuda.is_available() else 'cpu'
        else:
            self.device = config.device
        self.model = self.model.to(self.device)
        self.iter_num = 0
        self.iter_time = 0.0
        self.iter_dt = 0.0

    def add_callback(self, onevent: str, callback):
        self.callbacks[onevent].append(callback)

    def trigger_callbacks(self, onevent: str):
        for callback in self.callbacks.get(onevent, []):
            callback(self)

    def run(self):
        model, config = self.model, self.config
        self.optimizer = model.configure_optimizers(config)

        # the course shuffles with a seeded generator; the order here is the shared index list
        train_loader = DataLoader(
            self.train_dataset,
            sampler=self.order,
            shuffle=False,
            generator=torch.Generator().manual_seed(3407),
            pin_memory=False,
            batch_size=config.batch_size,
            num_workers=config.num_workers,
            drop_last=True,
        )

        model.train()
        self.iter_num = 0
        self.iter_time = time.time()
        data_iter = iter(train_loader)
        while True:
            try:
                batch = next(data_iter)
            except StopIteration:
                data_iter = iter(train_loader)
                batch = next(data_iter)
            batch = [t.to(self.device) for t in batch]
            x, y = batch

            logits, self.loss = model(x, y)
            model.zero_grad(set_to_none=True)
            self.loss.backward()
            self.trigger_callbacks('on_backward_end')
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_norm_clip)
            self.optimizer.step()

            self.trigger_callbacks('on_batch_end')
            self.iter_num += 1
            tnow = time.time()
            self.iter_dt = tnow - self.iter_time
            self.iter_time = tnow
            if config.max_iters is not None and self.iter_num >= config.max_iters:
                break


# ----------------------------------------------------------------------------- demo: sorting

class SortDataset(Dataset):
    """Sequences of digits and their sorted copy: the model reads `inp` and writes `sorted(inp)`.
    Only the answer is scored (the targets under the question are -1, the ignored index)."""

    def __init__(self, inputs, num_digits):
        self.inputs = inputs  # (n, length) int64 numpy array: the fixed questions
        self.length = inputs.shape[1]
        self.num_digits = num_digits

    def __len__(self):
        return len(self.inputs)

    def get_vocab_size(self):
        return self.num_digits

    def get_block_size(self):
        # the length of the sequence fed to the transformer: the question and the answer, minus
        # one, as the last digit is only ever a target
        return self.length * 2 - 1

    def __getitem__(self, idx):
        inp = torch.from_numpy(self.inputs[idx])
        sol = torch.sort(inp)[0]
        cat = torch.cat((inp, sol), dim=0)
        x = cat[:-1].clone()
        y = cat[1:].clone()
        y[:self.length - 1] = -1  # no loss on the question
        return x, y


init_path, max_iters = sys.argv[1], int(sys.argv[2])
set_seed(3407)
rng = np.random.default_rng(0)  # the fixed data, the same in both runs
questions = rng.integers(0, 12, size=(256, 6))
train_dataset = SortDataset(questions, num_digits=12)
test_dataset = SortDataset(rng.integers(0, 12, size=(48, 6)), num_digits=12)

model_config = GPT.get_default_config()
model_config.merge_from_dict(dict(n_layer=2, n_head=2, n_embd=32, embd_pdrop=0.0, resid_pdrop=0.0, attn_pdrop=0.0))
model_config.vocab_size = train_dataset.get_vocab_size()
model_config.block_size = train_dataset.get_block_size()
model = GPT(model_config)
if os.path.exists(init_path):  # the saved initial weights
    model.load_state_dict({k: torch.tensor(v) for k, v in np.load(init_path).items()})
else:
    np.savez(init_path, **{k: v.detach().cpu().numpy() for k, v in model.state_dict().items()})

train_config = Trainer.get_default_config()
train_config.learning_rate = 3e-3
train_config.max_iters = max_iters
train_config.batch_size = 16
order = rng.permutation(len(train_dataset)).tolist()
trainer = Trainer(train_config, model, train_dataset, order)

losses, first_grad = [], {}


def record_grad(trainer):
    if trainer.iter_num == 0:
        w = dict(trainer.model.named_parameters())["transformer.h.0.attn.c_attn.weight"]
        first_grad["grad"] = w.grad.tolist()


def batch_end_callback(trainer):
    losses.append(trainer.loss.item())


trainer.add_callback('on_backward_end', record_grad)
trainer.add_callback('on_batch_end', batch_end_callback)
trainer.run()



def eval_split(trainer, split, max_batches):
    dataset = {'train': train_dataset, 'test': test_dataset}[split]
    n = train_dataset.length  # the question's length
    results = []
    loader = DataLoader(dataset, batch_size=32, num_workers=0, drop_last=False)
    for b, (x, y) in enumerate(loader):
        x = x.to(trainer.device)
        y = y.to(trainer.device)
        # isolate the input pattern alone
        inp = x[:, :n]
        sol = y[:, -n:]
        # let the model sample the rest of the sequence
        cat = model.generate(inp, n, do_sample=False)  # using greedy argmax, not sampling
        sol_candidate = cat[:, n:]  # isolate the filled in sequence
        # compare the predicted sequence to the true sequence
        correct = (sol == sol_candidate).all(1).cpu()
        for i in range(x.size(0)):
            results.append(int(correct[i]))
        if max_batches is not None and b + 1 >= max_batches:
            break
    rt = torch.tensor(results, dtype=torch.float)
    print("%s final score: %d/%d = %.2f%% correct" % (split, rt.sum(), len(results), 100 * rt.mean()),
          file=sys.stderr)
    return rt.sum()


model.eval()
with torch.no_grad():
    train_score = eval_split(trainer, 'train', max_batches=2)
    test_score = eval_split(trainer, 'test', max_batches=None)
    inp = torch.tensor([[11, 3, 7, 0, 3, 5]], dtype=torch.long)
    cat = model.generate(inp, 6, do_sample=False)
tokens = cat[0].tolist()
checksum = float(sum(p.detach().double().abs().sum() for p in model.parameters()))
print(json.dumps({"losses": losses, "tokens": tokens, "params": model.n_params, "checksum": checksum,
                  "grad": first_grad["grad"], "scores": [train_score.item(), test_score.item()]}))
