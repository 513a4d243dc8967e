"""A GPT in the style of a build-an-LLM-from-scratch book's chapters 2 to 5, as a course hands
them out: a sliding-window GPTDatasetV1 and create_dataloader_v1, MultiHeadAttention with a
registered upper-triangular `mask` buffer filled in place with -inf, its own LayerNorm and GELU,
FeedForward as nn.Sequential, TransformerBlock and GPTModel, calc_loss_batch / calc_loss_loader,
train_model_simple with evaluate_model under model.eval() and torch.no_grad(), and greedy
generate_text_simple. tests/run/ runs it with torch and under `minigrad run`.

    python llm_book_gpt.py INIT.npz STEPS     (INIT.npz: written with the initial weights if missing)

The token ids are fixed numpy data (no tokenizer). The training loader is made with
shuffle=False, where the book shuffles: torch's randperm and minigrad's permutation are
different generators, so a shuffled loader would feed the two runs different batches.

Prints the per-step training losses, the evaluations, the greedy continuation, the parameter
count, the final weights' checksum and one parameter's first gradient as JSON."""

import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

# ----------------------------------------------------------------------------- chapter 2: data


class GPTDatasetV1(Dataset):
    def __init__(self, token_ids, max_length, stride):
        self.input_ids = []
        self.target_ids = []
        # chunk the token ids into overlapping sequences of max_length
        for i in range(0, len(token_ids) - max_length, stride):
            input_chunk = token_ids[i:i + max_length]
            target_chunk = token_ids[i + 1: i + max_length + 1]
            self.input_ids.append(torch.tensor(input_chunk))
            self.target_ids.append(torch.tensor(target_chunk))

    def __len__(self):
        return len(self.input_ids)

    def __getitem__(self, idx):
        return self.input_ids[idx], self.target_ids[idx]


def create_dataloader_v1(token_ids, batch_size=4, max_length=8, stride=4, shuffle=False, drop_last=True,
                         num_workers=0):
    dataset = GPTDatasetV1(token_ids, max_length, stride)
    dataloader = DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                            num_workers=num_workers)
    return dataloader


# ----------------------------------------------------------------------------- chapter 3: attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert (d_out % num_heads == 0), "d_out must be divisible by num_heads"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads  # the projection's width, split among the heads

        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # combines the heads' outputs
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape

        keys = self.W_key(x)  # shape: (b, num_tokens, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)

        # split the last dimension: (b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        # (b, num_tokens, num_heads, head_dim) -> (b, num_heads, num_tokens, head_dim)
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        # dot products for each head
        attn_scores = queries @ keys.transpose(2, 3)

        # the mask, cut to the number of tokens and made boolean
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]

        # fill the masked scores with -inf, in place
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        # shape: (b, num_tokens, num_heads, head_dim)
        context_vec = (attn_weights @ values).transpose(1, 2)

        # the heads side by side again: self.d_out = self.num_heads * self.head_dim
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)  # optional projection

        return context_vec


# ----------------------------------------------------------------------------- chapter 4: the model


class LayerNorm(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        norm_x = (x - mean) / torch.sqrt(var + self.eps)
        return self.scale * norm_x + self.shift


class GELU(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(
            torch.sqrt(torch.tensor(2.0 / torch.pi)) *
            (x + 0.044715 * torch.pow(x, 3))
        ))


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(cfg["emb_dim"], 4 * cfg["emb_dim"]),
            GELU(),
            nn.Linear(4 * cfg["emb_dim"], cfg["emb_dim"]),
        )

    def forward(self, x):
        return self.layers(x)


class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.att = MultiHeadAttention(
            d_in=cfg["emb_dim"],
            d_out=cfg["emb_dim"],
            context_length=cfg["context_length"],
            num_heads=cfg["n_heads"],
            dropout=cfg["drop_rate"],
            qkv_bias=cfg["qkv_bias"])
        self.ff = FeedForward(cfg)
        self.norm1 = LayerNorm(cfg["emb_dim"])
        self.norm2 = LayerNorm(cfg["emb_dim"])
        self.drop_shortcut = nn.Dropout(cfg["drop_rate"])

    def forward(self, x):
        # shortcut connection for the attention block
        shortcut = x
        x = self.norm1(x)
        x = self.att(x)  # shape [batch_size, num_tokens, emb_size]
        x = self.drop_shortcut(x)
        x = x + shortcut  # add the original input back

        # shortcut connection for the feed-forward block
        shortcut = x
        x = self.norm2(x)
        x = self.ff(x)
        x = self.drop_shortcut(x)
        x = x + shortcut
        return x


class GPTModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.drop_emb = nn.Dropout(cfg["drop_rate"])

        self.trf_blocks = nn.Sequential(
            *[TransformerBlock(cfg) for _ in range(cfg["n_layers"])])

        self.final_norm = LayerNorm(cfg["emb_dim"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

    def forward(self, in_idx):
        batch_size, seq_len = in_idx.shape
        tok_embeds = self.tok_emb(in_idx)
        pos_embeds = self.pos_emb(torch.arange(seq_len, device=in_idx.device))
        x = tok_embeds + pos_embeds  # shape [batch_size, num_tokens, emb_size]
        x = self.drop_emb(x)
        x = self.trf_blocks(x)
        x = self.final_norm(x)
        logits = self.out_head(x)
        return logits


def generate_text_simple(model, idx, max_new_tokens, context_size):
    # idx is a (batch, n_tokens) array of indices in the current context
    for _ in range(max_new_tokens):
        # crop the context to the supported context size
        idx_cond = idx[:, -context_size:]

        with torch.no_grad():
            logits = model(idx_cond)

        # only the last time step: (batch, n_token, vocab_size) -> (batch, vocab_size)
        logits = logits[:, -1, :]
        probas = torch.softmax(logits, dim=-1)  # (batch, vocab_size)
        idx_next = torch.argmax(probas, dim=-1, keepdim=True)  # (batch, 1)
        idx = torch.cat((idx, idx_next), dim=1)  # (batch, n_tokens+1)

    return idx


# ----------------------------------------------------------------------------- chapter 5: training


def text_to_token_ids(text, tokenizer):
    encoded = tokenizer.encode(text)
    encoded_tensor = torch.tensor(encoded).unsqueeze(0)  # add the batch dimension
    return encoded_tensor


def token_ids_to_text(token_ids, tokenizer):
    flat = token_ids.squeeze(0)  # remove the batch dimension
    return tokenizer.decode(flat.tolist())


class CharTokenizer:
    """One character a token (the book's tokenizers, cut down to a dozen letters)."""

    def __init__(self, vocab):
        self.str_to_int = {ch: i for i, ch in enumerate(vocab)}
        self.int_to_str = {i: ch for ch, i in self.str_to_int.items()}

    def encode(self, text):
        return [self.str_to_int[ch] for ch in text]

    def decode(self, ids):
        return "".join(self.int_to_str[i] for i in ids)


def calc_loss_batch(input_batch, target_batch, model, device):
    input_batch, target_batch = input_batch.to(device), target_batch.to(device)
    logits = model(input_batch)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), target_batch.flatten())
    return loss


def calc_loss_loader(data_loader, model, device, num_batches=None):
    total_loss = 0.
    if len(data_loader) == 0:
        return float("nan")
    elif num_batches is None:
        num_batches = len(data_loader)
    else:
        # fewer batches than asked for if the loader has fewer
        num_batches = min(num_batches, len(data_loader))
    for i, (input_batch, target_batch) in enumerate(data_loader):
        if i < num_batches:
            loss = calc_loss_batch(input_batch, target_batch, model, device)
            total_loss += loss.item()
        else:
            break
    return total_loss / num_batches


def evaluate_model(model, train_loader, val_loader, device, eval_iter):
    model.eval()
    with torch.no_grad():
        train_loss = calc_loss_loader(train_loader, model, device, num_batches=eval_iter)
        val_loss = calc_loss_loader(val_loader, model, device, num_batches=eval_iter)
    model.train()
    return train_loss, val_loss


def generate(model, idx, max_new_tokens, context_size, temperature=0.0, top_k=None, eos_id=None):
    for _ in range(max_new_tokens):
        idx_cond = idx[:, -context_size:]
        with torch.no_grad():
            logits = model(idx_cond)
        logits = logits[:, -1, :]

        # keep only the top_k logits
        if top_k is not None:
            top_logits, _ = torch.topk(logits, top_k)
            min_val = top_logits[:, -1]
            logits = torch.where(logits < min_val, torch.tensor(float("-inf")).to(logits.device), logits)

        if temperature > 0.0:  # sample
            logits = logits / temperature
            probs = torch.softmax(logits, dim=-1)  # (batch_size, context_len)
            idx_next = torch.multinomial(probs, num_samples=1)  # (batch_size, 1)
        else:  # greedy: the most likely token
            idx_next = torch.argmax(logits, dim=-1, keepdim=True)  # (batch_size, 1)

        if idx_next == eos_id:  # stop early at the end-of-sequence token
            break
        idx = torch.cat((idx, idx_next), dim=1)  # (batch_size, num_tokens+1)

    return idx


def generate_and_print_sample(model, tokenizer, device, start_context):
    model.eval()
    context_size = model.pos_emb.weight.shape[0]
    encoded = text_to_token_ids(start_context, tokenizer).to(device)
    with torch.no_grad():
        token_ids = generate_text_simple(model=model, idx=encoded, max_new_tokens=10, context_size=context_size)
    decoded_text = token_ids_to_text(token_ids, tokenizer)
    print(decoded_text.replace("\n", " "), file=sys.stderr)  # compact print format
    model.train()
    return decoded_text


def train_model_simple(model, train_loader, val_loader, optimizer, device, num_steps, eval_freq, eval_iter,
                       start_context, tokenizer, grad_of):
    step_losses, train_losses, val_losses, track_tokens_seen = [], [], [], []
    first_grad, samples = None, []
    tokens_seen, global_step = 0, -1

    while global_step + 1 < num_steps:  # epochs until the steps are done
        model.train()
        for input_batch, target_batch in train_loader:
            optimizer.zero_grad()  # reset the gradients of the previous batch
            loss = calc_loss_batch(input_batch, target_batch, model, device)
            loss.backward()  # the loss gradients
            if first_grad is None:
                first_grad = dict(model.named_parameters())[grad_of].grad.tolist()
            optimizer.step()  # update the weights with the gradients
            tokens_seen += input_batch.numel()
            global_step += 1
            step_losses.append(loss.item())

            if global_step % eval_freq == 0:
                train_loss, val_loss = evaluate_model(model, train_loader, val_loader, device, eval_iter)
                train_losses.append(train_loss)
                val_losses.append(val_loss)
                track_tokens_seen.append(tokens_seen)
            if global_step + 1 >= num_steps:
                break

        # a sample after each epoch
        samples.append(generate_and_print_sample(model, tokenizer, device, start_context))

    return samples, step_losses, train_losses, val_losses, track_tokens_seen, first_grad


def train_model(model, train_loader, val_loader, optimizer, device, n_epochs, eval_freq, eval_iter,
                warmup_steps, initial_lr=3e-05, min_lr=1e-6):
    """The appendix's loop: linear warmup, cosine decay and gradient clipping."""
    train_losses, val_losses, track_tokens_seen, track_lrs = [], [], [], []
    tokens_seen, global_step = 0, -1

    peak_lr = optimizer.param_groups[0]["lr"]  # the maximum learning rate, from the optimizer
    total_training_steps = len(train_loader) * n_epochs
    lr_increment = (peak_lr - initial_lr) / warmup_steps

    for epoch in range(n_epochs):
        model.train()
        for input_batch, target_batch in train_loader:
            optimizer.zero_grad()
            global_step += 1

            if global_step < warmup_steps:  # linear warmup
                lr = initial_lr + global_step * lr_increment
            else:  # cosine annealing after the warmup
                progress = ((global_step - warmup_steps) / (total_training_steps - warmup_steps))
                lr = min_lr + (peak_lr - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))

            for param_group in optimizer.param_groups:  # the new learning rate, in place
                param_group["lr"] = lr
            track_lrs.append(lr)

            loss = calc_loss_batch(input_batch, target_batch, model, device)
            loss.backward()

            # clip the gradients after the warmup, so that they do not explode
            if global_step >= warmup_steps:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)

            optimizer.step()
            tokens_seen += input_batch.numel()
            train_losses.append(loss.item())

            if global_step % eval_freq == 0:
                _, val_loss = evaluate_model(model, train_loader, val_loader, device, eval_iter)
                val_losses.append(val_loss)
                track_tokens_seen.append(tokens_seen)

    return train_losses, val_losses, track_tokens_seen, track_lrs


GPT_CONFIG_TINY = {
    "vocab_size": 12,       # a dozen token ids
    "context_length": 8,    # the longest context
    "emb_dim": 24,          # the embedding's width
    "n_heads": 2,           # attention heads
    "n_layers": 2,          # transformer blocks
    "drop_rate": 0.1,       # dropout, off below so that the runs agree
    "qkv_bias": False,      # no bias in the query, key and value projections
}

init_path, num_steps = sys.argv[1], int(sys.argv[2])
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(123)
cfg = {**GPT_CONFIG_TINY, "drop_rate": 0.0}
model = GPTModel(cfg)
if os.path.exists(init_path):  # the saved initial weights
    model.load_state_dict({k: torch.tensor(v) for k, v in np.load(init_path).items()})
else:
    np.savez(init_path, **{k: v.detach().cpu().numpy() for k, v in model.state_dict().items()})
model.to(device)

# a fixed token stream, the same in both runs: a repeating pattern with some noise, so that
# there is something to learn
rng = np.random.default_rng(0)
pattern = np.tile(np.arange(12), 40)
noise = rng.integers(0, 12, size=pattern.shape)
token_ids = np.where(rng.random(pattern.shape) < 0.2, noise, pattern).tolist()
split_idx = int(0.9 * len(token_ids))
train_loader = create_dataloader_v1(token_ids[:split_idx], batch_size=4, max_length=cfg["context_length"],
                                    stride=cfg["context_length"], shuffle=False, drop_last=True)
val_loader = create_dataloader_v1(token_ids[split_idx:], batch_size=4, max_length=cfg["context_length"],
                                  stride=cfg["context_length"], shuffle=False, drop_last=False)

optimizer = torch.optim.AdamW(model.parameters(), lr=0.004, weight_decay=0.1)
tokenizer = CharTokenizer("abcdefghijkl")
samples, steps, train_losses, val_losses, tokens_seen, grad = train_model_simple(
    model, train_loader, val_loader, optimizer, device, num_steps=num_steps, eval_freq=10, eval_iter=2,
    start_context="defg", tokenizer=tokenizer, grad_of="trf_blocks.0.att.W_query.weight")

model.eval()
start = torch.tensor([[3, 4, 5]])
tokens = generate_text_simple(model, start, max_new_tokens=8, context_size=cfg["context_length"])[0].tolist()
top_k_tokens = generate(model, text_to_token_ids("jkl", tokenizer), max_new_tokens=8,
                        context_size=cfg["context_length"], temperature=0.0, top_k=3)[0].tolist()
contexts = torch.cat((text_to_token_ids("jkl", tokenizer), text_to_token_ids("bcd", tokenizer)), dim=0)
batch_tokens = generate(model, contexts, max_new_tokens=8, context_size=cfg["context_length"],
                        temperature=0.0).tolist()  # a batch of two: `idx_next == eos_id`, eos_id None, is False
total_params = sum(p.numel() for p in model.parameters())
checksum = float(sum(p.detach().double().abs().sum() for p in model.parameters()))

# save the weights alone, and load them back
model_path = os.path.join(os.path.dirname(os.path.abspath(init_path)), "model.pth")
torch.save(model.state_dict(), model_path)
model = GPTModel(cfg)
model.load_state_dict(torch.load(model_path, map_location=device, weights_only=True))
model.eval()
reloaded_tokens = generate_text_simple(model, start, max_new_tokens=8, context_size=cfg["context_length"])[0].tolist()

# save the model and the optimizer, load them into fresh ones, and train on with the appendix's loop
ckpt_path = os.path.join(os.path.dirname(os.path.abspath(init_path)), "model_and_optimizer.pth")
torch.save({"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict()}, ckpt_path)
checkpoint = torch.load(ckpt_path, weights_only=True)
model = GPTModel(cfg)
model.load_state_dict(checkpoint["model_state_dict"])
optimizer = torch.optim.AdamW(model.parameters(), lr=0.0005, weight_decay=0.1)
optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
model.train()
resumed, resumed_val, _, lrs = train_model(model, train_loader, val_loader, optimizer, device, n_epochs=1,
                                           eval_freq=5, eval_iter=1, warmup_steps=3)

print(json.dumps({"losses": steps, "train_losses": train_losses, "val_losses": val_losses,
                  "tokens_seen": tokens_seen, "tokens": tokens, "top_k_tokens": top_k_tokens,
                  "batch_tokens": batch_tokens,
                  "samples": samples, "params": total_params, "checksum": checksum, "grad": grad,
                  "reloaded_tokens": reloaded_tokens, "resumed_losses": resumed, "resumed_val": resumed_val,
                  "lrs": lrs}))
