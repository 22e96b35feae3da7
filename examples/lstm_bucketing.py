"""A bucketed LSTM language model: BucketingModule over mx.rnn cells, on a generated corpus
that ships with mxtorch, reporting perplexity per epoch.

    python examples/lstm_bucketing.py [--epochs 5] [--unfused] [--context cpu]
"""
import argparse
import logging

import numpy as np

import mxtorch as mx
from mxtorch.datasets import synthetic_sentences


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
    parser.add_argument('--sentences', type=int, default=3000, help='size of the corpus')
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--unfused', action='store_true',
                        help='unrolled LSTMCells instead of one fused RNN operator')
    parser.add_argument('--context', default='cpu', choices=('cpu', 'gpu'))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    mx.random.seed(0)
    np.random.seed(0)

    invalid = 0                       # label 0 pads; real words start at 1
    encoded, vocab = mx.rnn.encode_sentences(synthetic_sentences(args.sentences, seed=1),
                                             invalid_label=invalid, start_label=1)
    buckets = [int(b) for b in args.buckets.split(',')]
    split = int(len(encoded) * 0.9)
    train = mx.rnn.BucketSentenceIter(encoded[:split], args.batch_size, buckets=buckets,
                                      invalid_label=invalid)
    val = mx.rnn.BucketSentenceIter(encoded[split:], args.batch_size, buckets=buckets,
                                    invalid_label=invalid)
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
