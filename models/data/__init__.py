"""Data for the models: text corpora, tokenizers, synthetic sequence tasks and digits.

Pure Python and numpy (scikit-learn for the digits only); nothing here imports minigrad.
"""

from .digits import load_digits_split
from .tasks import (
    DATE_FORMATS,
    SEQ_VOCAB,
    TASKS,
    TaskTokenizer,
    addition_task,
    copy_task,
    dates_task,
    encode_pairs,
    format_date,
    make_examples,
    reverse_task,
    sort_task,
    split_of,
)
from .text import (
    load_text,
    nsp_pairs,
    sentences,
    split_docstrings,
    stdlib_corpus,
    train_val_split,
)
from .tokenizers import CharTokenizer, WordTokenizer, tokenizer_from_dict

__all__ = [
    "CharTokenizer",
    "DATE_FORMATS",
    "SEQ_VOCAB",
    "TASKS",
    "TaskTokenizer",
    "WordTokenizer",
    "addition_task",
    "copy_task",
    "dates_task",
    "encode_pairs",
    "format_date",
    "load_digits_split",
    "load_text",
    "make_examples",
    "nsp_pairs",
    "reverse_task",
    "sentences",
    "sort_task",
    "split_docstrings",
    "split_of",
    "stdlib_corpus",
    "tokenizer_from_dict",
    "train_val_split",
]
