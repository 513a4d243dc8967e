"""A GRU encoder and an attention decoder in the style of PyTorch's tutorial "NLP From Scratch:
Translation with a Sequence to Sequence Network and Attention", as a course hands it out:
EncoderRNN (nn.Embedding, nn.GRU(batch_first=True), nn.Dropout), BahdanauAttention (Wa, Ua,
Va), AttnDecoderRNN with teacher forcing over the target tensor and topk(1) greedy decoding
otherwise, nn.NLLLoss over the log-softmax outputs, an Adam optimizer for each of the two
networks, batches from a TensorDataset and a DataLoader, then evaluate() under torch.no_grad().
The "language" is synthetic: a target sentence is its source reversed. tests/run/ runs it with
torch and under `minigrad run`.

    python seq2seq_gru.py INIT.npz STEPS     (INIT.npz: written with the initial weights if missing)

Prints the losses, the greedy translations, the parameter count, the final weights' checksum and
the first backward's gradient of one parameter as JSON."""

# ruff: noqa: UP008, B007  (the published code's super(Class, self) and its unused loop counters)

import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.utils.data import DataLoader, Sampler, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

SOS_token = 0
EOS_token = 1
MAX_LENGTH = 8


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super(EncoderRNN, self).__init__()
        self.hidden_size = hidden_size

        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super(BahdanauAttention, self).__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)

        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)

        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super(AttnDecoderRNN, self).__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long, device=device).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs
            )
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)

            if target_tensor is not None:
                # Teacher forcing: the target is the next input
                decoder_input = target_tensor[:, i].unsqueeze(1)
            else:
                # Without teacher forcing: its own prediction is the next input
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()  # detach from history as input

        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)

        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))

        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)

        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)

        return output, hidden, attn_weights


# ----------------------------------------------------------------------------- the data

n_words = 11  # SOS, EOS and nine words
pair_rng = np.random.default_rng(0)  # fixed numpy data: the same pairs in both runs


def random_pair():
    length = int(pair_rng.integers(3, MAX_LENGTH))  # with its EOS, at most MAX_LENGTH tokens
    words = pair_rng.integers(2, n_words, length)
    return words.tolist(), words[::-1].tolist()


pairs = [random_pair() for _ in range(40)]


class EpochOrderSampler(Sampler):
    """A new order each epoch, as RandomSampler gives, but drawn from numpy: torch's and
    minigrad's random streams differ, so a seeded RandomSampler would not give both runs the
    same batches."""

    def __init__(self, data_source, seed=0):
        self.n = len(data_source)
        self.rng = np.random.default_rng(seed)

    def __iter__(self):
        return iter(self.rng.permutation(self.n).tolist())

    def __len__(self):
        return self.n


def get_dataloader(batch_size):
    n = len(pairs)
    input_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)
    target_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)

    for idx, (inp, tgt) in enumerate(pairs):
        inp_ids = inp + [EOS_token]
        tgt_ids = tgt + [EOS_token]
        input_ids[idx, :len(inp_ids)] = inp_ids
        target_ids[idx, :len(tgt_ids)] = tgt_ids

    train_data = TensorDataset(torch.LongTensor(input_ids).to(device),
                               torch.LongTensor(target_ids).to(device))

    train_sampler = EpochOrderSampler(train_data)
    train_dataloader = DataLoader(train_data, sampler=train_sampler, batch_size=batch_size)
    return train_dataloader


# ----------------------------------------------------------------------------- training

def train_epoch(dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion, log):
    total_loss = 0
    for data in dataloader:
        if len(log["losses"]) == log["steps"]:
            break
        input_tensor, target_tensor = data

        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)

        loss = criterion(
            decoder_outputs.view(-1, decoder_outputs.size(-1)),
            target_tensor.view(-1)
        )
        loss.backward()
        if log["grad"] is None:
            log["grad"] = encoder.gru.weight_hh_l0.grad.flatten().tolist()

        encoder_optimizer.step()
        decoder_optimizer.step()

        total_loss += loss.item()
        log["losses"].append(loss.item())

    return total_loss / len(dataloader)


def train(train_dataloader, encoder, decoder, steps, learning_rate=0.001):
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=learning_rate)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=learning_rate)
    criterion = nn.NLLLoss()

    log = {"losses": [], "steps": steps, "grad": None}
    while len(log["losses"]) < steps:
        train_epoch(train_dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion,
                    log)
    return log


def evaluate(encoder, decoder, sentence):
    with torch.no_grad():
        input_tensor = torch.tensor(sentence + [EOS_token], dtype=torch.long, device=device).view(1, -1)

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)

        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()

        decoded_words = []
        for idx in decoded_ids:
            if idx.item() == EOS_token:
                decoded_words.append(EOS_token)
                break
            decoded_words.append(idx.item())
    return decoded_words, decoder_attn


init_path, steps = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
hidden_size = 16
batch_size = 8

train_dataloader = get_dataloader(batch_size)
encoder = EncoderRNN(n_words, hidden_size, dropout_p=0.0).to(device)
decoder = AttnDecoderRNN(hidden_size, n_words, dropout_p=0.0).to(device)
if os.path.exists(init_path):  # the initial weights the torch run wrote
    saved = np.load(init_path)
    for prefix, net in (("encoder.", encoder), ("decoder.", decoder)):
        net.load_state_dict({k[len(prefix):]: torch.tensor(v)
                             for k, v in saved.items() if k.startswith(prefix)})
else:
    np.savez(init_path, **{prefix + k: v.detach().cpu().numpy()
                           for prefix, net in (("encoder.", encoder), ("decoder.", decoder))
                           for k, v in net.state_dict().items()})

log = train(train_dataloader, encoder, decoder, steps, learning_rate=0.01)

encoder.eval()
decoder.eval()
translations = []
for sentence, _ in pairs[:4]:
    words, attentions = evaluate(encoder, decoder, sentence)
    translations.append(words)

# Va's bias gets no gradient in exact arithmetic (softmax ignores a shift shared by every
# score): its gradient is rounding noise, which Adam turns into steps of size lr. It is summed
# apart, as it is not the math's.
named = {prefix + n: p for prefix, net in (("encoder.", encoder), ("decoder.", decoder))
         for n, p in net.named_parameters()}
params = sum(p.numel() for p in named.values())
checksum = float(sum(p.detach().double().abs().sum()
                     for n, p in named.items() if n != "decoder.attention.Va.bias"))
print(json.dumps({"losses": log["losses"], "tokens": translations, "targets": [t for _, t in pairs[:4]],
                  "params": params, "checksum": checksum,
                  "va_bias": named["decoder.attention.Va.bias"].tolist(),
                  "grad_name": "encoder.gru.weight_hh_l0", "grad": log["grad"]}))
