"""A bucketed LSTM language model: BucketingModule over mx.rnn cells, reporting perplexity per
epoch. By default it trains on a generated corpus that ships with mxtorch
(mxtorch.datasets.synthetic_sentences); --train-file/--valid-file take text files instead, one
sentence per line, words separated by spaces (e.g. the Penn Treebank's ptb.train.txt).

    python examples/lstm_bucketing.py [--epochs 5] [--unfused] [--context cpu]
    python examples/lstm_bucketing.py --train-file ptb.train.txt --valid-file ptb.valid.txt
"""
import argparse
import logging

import numpy as np

import mxtorch as mx
from mxtorch.datasets import synthetic_sentences


def read_sentences(path):
    """The sentences of a text file: one per non-empty line, split on whitespace."""
    with open(path, encoding='utf-8') as f:
        return [line.split() for line in f if line.split()]


def build(num_words, args):
    """sym_gen for BucketingModule: sequence length -> (symbol, data names, label names)."""
    if not args.unfused:
        stack = mx.rnn.FusedRNNCell(args.num_hidden, num_layers=args.num_layers, mode='lstm',
                                    prefix='lstm_')
    else:
        stack = mx.rnn.SequentialRNNCell()
        for i in range(args.num_layers):
            stack.add(mx.rnn.LSTMCell(num_hidden=args.num_hidden, prefix='lstm_l%d_' % i))

    def sym_gen(seq_len):
        data = mx.sym.Variable('data')
        label = mx.sym.Variable('softmax_label')
        embed = mx.sym.Embedding(data, input_dim=num_words, output_dim=args.num_embed,
                                 name='embed')
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, args.num_hidden))
        pred = mx.sym.FullyConnected(pred, num_hidden=num_words, name='pred')
        label = mx.sym.Reshape(label, shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name='softmax'), ('data',), ('softmax_label',)
    return sym_gen


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--epochs', type=int, default=5)
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--num-embed', type=int, default=64)
    parser.add_argument('--num-hidden', type=int, default=128)
    parser.add_argument('--num-layers', type=int, default=2)
    parser.add_argument('--buckets', default='10,20,30')
    parser.add_argument('--sentences', type=int, default=3000,
                        help='size of the generated corpus')
    parser.add_argument('--train-file', help='train on this text file (one sentence a line)')
    parser.add_argument('--valid-file', help='validate on this text file (default: the last '
                        'tenth of the training sentences)')
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--unfused', action='store_true',
                        help='unrolled LSTMCells instead of one fused RNN operator')
    parser.add_argument('--context', default='cpu', choices=('cpu', 'gpu'))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    mx.random.seed(0)
    np.random.seed(0)

    invalid = 0                       # label 0 pads; real words start at 1
    if args.valid_file and not args.train_file:
        parser.error('--valid-file needs --train-file')
    sentences = (read_sentences(args.train_file) if args.train_file
                 else synthetic_sentences(args.sentences, seed=1))
    if args.valid_file:
        train_sentences, valid_sentences = sentences, read_sentences(args.valid_file)
    else:
        split = int(len(sentences) * 0.9)
        train_sentences, valid_sentences = sentences[:split], sentences[split:]
    # one vocabulary for both; words seen only in validation text get codes of their own
    encoded, vocab = mx.rnn.encode_sentences(train_sentences + valid_sentences,
                                             invalid_label=invalid, start_label=1)
    buckets = [int(b) for b in args.buckets.split(',')]
    train = mx.rnn.BucketSentenceIter(encoded[:len(train_sentences)], args.batch_size,
                                      buckets=buckets, invalid_label=invalid)
    val = mx.rnn.BucketSentenceIter(encoded[len(train_sentences):], args.batch_size,
                                    buckets=buckets, invalid_label=invalid)
    for name, data in (('training', train), ('validation', val)):
        if not data.idx:
            parser.error('the %s sentences fill no batch of %d in any bucket (%s): give more '
                         'sentences or a smaller --batch-size' % (name, args.batch_size,
                                                                   args.buckets))
    ctx = mx.gpu() if args.context == 'gpu' else mx.cpu()
    model = mx.mod.BucketingModule(build(len(vocab) + 1, args),
                                   default_bucket_key=train.default_bucket_key, context=ctx)
    model.fit(train, eval_data=val, num_epoch=args.epochs,
              eval_metric=mx.metric.Perplexity(invalid),
              optimizer='adam', optimizer_params={'learning_rate': args.lr, 'wd': 1e-5,
                                                  'clip_gradient': 5.0},
              initializer=mx.init.Xavier(factor_type='in', magnitude=2.34),
              batch_end_callback=mx.callback.Speedometer(args.batch_size, 20))
    perplexity = dict(model.score(val, mx.metric.Perplexity(invalid)))['perplexity']
    logging.info('Validation perplexity %.2f (vocabulary of %d words)', perplexity, len(vocab))
    return perplexity


if __name__ == '__main__':
    main()
