"""Constants of mx.contrib.text."""
UNKNOWN_IDX = 0          # index of the unknown token in every Vocabulary
EOS_TOKEN = '<eos>'      # end of sentence, appended to each line by the language-model datasets
