#!/bin/bash
# The table of docs/precision.md "Measured fidelity": lstmlm fidelity at bf16 and int8 on the bundled models
# and the real models of ../shared/data, converted into a scratch directory. Prints the markdown table.
# usage: bench/fidelity_table/run.sh [SCRATCH_DIR]   (LSTMLM=path/to/lstmlm, default build/lstmlm)
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
W=${1:-$(mktemp -d)}
B=${LSTMLM:-$ROOT/build/lstmlm}
D=$ROOT/../shared/data
M=$W/models
T=$W/texts
O=$W/out
PY=/usr/bin/python3
mkdir -p $M $T $O
# fid NAME MODEL TEXT [opts...]: bf16 and int8 jsonl into $O/NAME.{bf16,int8}.jsonl
fid() { n=$1 m=$2 t=$3; shift 3
  for p in bf16 int8; do $B fidelity -m $m --precision $p --output-format jsonl "$@" $t > $O/$n.$p.jsonl; done; }
# 1. bundled fairytales-word, test.txt, sentences
fid fw $ROOT/models/fairytales-word $D/torch-wlm-fairytales/test.txt
# 2. bundled charrnn-space, own text (first 20000 bytes of tf1-charrnn-space/input.txt), stream
head -c 20000 $D/tf1-charrnn-space/input.txt > $T/space20k.txt
fid cs_own $ROOT/models/charrnn-space $T/space20k.txt --context document
# 3. bundled charrnn-space, fairytales valid.txt, stream and sentences
fid cs_valid_doc $ROOT/models/charrnn-space $D/torch-wlm-fairytales/valid.txt --context document
fid cs_valid_sent $ROOT/models/charrnn-space $D/torch-wlm-fairytales/valid.txt
# 4. torch word_language_model (tied, 2 layers, V 4934), test.txt, stream (recipe: test_precision_fidelity.py)
[ -d $M/wlm100 ] || $PY $ROOT/tools/convert.py $D/torch-wlm-fairytales/model_epochs_25_logint_75_emsize_100_nhid_100_drop_05.pt $M/wlm100
fid wlm_doc $M/wlm100 $D/torch-wlm-fairytales/test.txt --context document
# 5. torch char LSTM (torch-charlstm-statedict/shakespeare.pt; recipe test_framework_recipes.py), first 300 lines of fairytales test.txt, stream
head -n 300 $D/torch-wlm-fairytales/test.txt > $T/test300.txt
[ -d $M/tchar ] || $PY $ROOT/tools/convert.py $D/torch-charlstm-statedict/shakespeare.pt $M/tchar
fid tchar_doc $M/tchar $T/test300.txt --context document
# 6. tf0.12 char-rnn artclasses (recipe test_framework_recipes.py: --vocab artclasses_vocab.pkl), same text, stream
[ -d $M/art ] || $PY $ROOT/tools/convert.py $D/tf012-charrnn-artclasses/model.ckpt-46499 $M/art --vocab $D/tf012-charrnn-artclasses/artclasses_vocab.pkl
fid art_doc $M/art $T/test300.txt --context document
# 7. keras3 ml-wordpred (recipe: --vocab word_index.json), first 300 lines of fairytales test.txt, sentences (default --pad-to 8404)
[ -d $M/wordpred ] || $PY $ROOT/tools/convert.py $D/keras3-ml-wordpred/word_prediction_model.h5 $M/wordpred --vocab $D/keras3-ml-wordpred/word_index.json
fid mlwp_sent $M/wordpred $T/test300.txt
# 8. keras3 cs-nextword (recipe: --vocab tokenizer1.pkl), first 200 non-blank lines of cs_sentences_1000.txt, sentences (default --pad-to 9)
[ -d $M/cs ] || $PY $ROOT/tools/convert.py $D/keras3-cs-nextword/next_word_model1.h5 $M/cs --vocab $D/keras3-cs-nextword/tokenizer1.pkl
grep -v '^[[:space:]]*$' $D/keras3-cs-nextword/cs_sentences_1000.txt | head -n 200 > $T/cs200.txt
fid cs200_sent $M/cs $T/cs200.txt
# 9. keras3 shakespeare char (recipe: --vocab char_to_idx.json), first 40 lines of fairytales test.txt lowercased, OOV chars dropped, stripped, blank dropped; stream
[ -d $M/shk ] || $PY $ROOT/tools/convert.py $D/keras3-shakespeare-char2/shakespeare.h5 $M/shk --vocab $D/keras3-shakespeare-char2/char_to_idx.json
$PY - $M/shk/vocab.json $D/torch-wlm-fairytales/test.txt $T/shk40.txt <<'PY'
import json, sys
v = json.load(open(sys.argv[1], encoding="utf-8"))
v = v["tokens"] if isinstance(v, dict) and "tokens" in v else v
chars = set(v)
lines = ["".join(c for c in l.lower() if c in chars).strip() for l in open(sys.argv[2], encoding="utf-8")][:40]
open(sys.argv[3], "w", encoding="utf-8").write("".join(l + "\n" for l in lines if l))
PY
fid shk_doc $M/shk $T/shk40.txt --context document
# 10. keras2 char one-hot (recipe test_framework_recipes.py: --vocab = sorted(set(data.txt.lower())) as a JSON list)
$PY -c 'import json,sys; full=open(sys.argv[1],encoding="utf-8").read().lower(); open(sys.argv[2],"w",encoding="utf-8").write(json.dumps(sorted(set(full))))' $D/keras2-char2-onehot/data.txt $T/k2-chars.json
[ -d $M/k2 ] || $PY $ROOT/tools/convert.py $D/keras2-char2-onehot/next_word_model.h5 $M/k2 --vocab $T/k2-chars.json
head -c 20000 $D/keras2-char2-onehot/data.txt | tr A-Z a-z > $T/k2own20k.txt   # first 20000 bytes of data.txt, lowercased (ASCII only)
fid k2_doc $M/k2 $T/k2own20k.txt --context document
# ---- extra rows (not in the old table)
# 11. tf1-charrnn-space converted (recipe: model.ckpt-248399, no --vocab): should equal the bundled charrnn-space
[ -d $M/space ] || $PY $ROOT/tools/convert.py $D/tf1-charrnn-space/model.ckpt-248399 $M/space
fid space_own $M/space $T/space20k.txt --context document
# 12. torch word_language_model small (emsize 20, nhid 20), test.txt, stream
[ -d $M/wlm20 ] || $PY $ROOT/tools/convert.py $D/torch-wlm-fairytales/model_epochs_5_logint_61_emsize_20_nhid_20_drop_05.pt $M/wlm20
fid wlm20_doc $M/wlm20 $D/torch-wlm-fairytales/test.txt --context document
# 13/14. ml5 charRNN (TF1 BasicLSTM, 2 layers; recipe test_import_ml5.py: the directory, no flags), test300, stream
for n in shakespeare dubois; do
  [ -d $M/ml5-$n ] || $PY $ROOT/tools/convert.py $D/ml5-charrnn-tf1-basiclstm/models/charRNN/$n $M/ml5-$n
  fid ml5_${n}_doc $M/ml5-$n $T/test300.txt --context document
done
# 15. tfjs keras 2.1.5 nietzsche char (recipe test_import_tfjs.py: lstm dir, --vocab char_indices.json), test300 lowercased, stream (default --pad-to 40, OOV chars skipped)
[ -d $M/nie ] || $PY $ROOT/tools/convert.py $D/tfjs-keras215-nietzsche-char/lstm $M/nie --vocab $D/tfjs-keras215-nietzsche-char/char_indices.json
tr A-Z a-z < $T/test300.txt > $T/test300.lower.txt
fid nie_doc $M/nie $T/test300.lower.txt --context document
# 16. tfjs keras 2.2.4 nyt headlines word (recipe: model.json, --vocab word_index.json), test300, sentences (default --pad-to 18; out of domain)
[ -d $M/nyt ] || $PY $ROOT/tools/convert.py $D/tfjs-keras224-nyt-headlines-word/model.json $M/nyt --vocab $D/tfjs-keras224-nyt-headlines-word/word_index.json
fid nyt_sent $M/nyt $T/test300.txt
# 17. onnx (tf2onnx of Keras) pkrupee next-word (recipe test_import_onnx.py: next_word_model.onnx --vocab tokenizer.pickle), own text pak_rupee_data.txt, sentences (default --pad-to 5)
[ -d $M/pk ] || $PY $ROOT/tools/convert.py $D/onnx-keras-nextword-pkrupee/next_word_model.onnx $M/pk --vocab $D/onnx-keras-nextword-pkrupee/tokenizer.pickle
fid pk_sent $M/pk $D/onnx-keras-nextword-pkrupee/pak_rupee_data.txt
# ---- table
EXTRA="space_own=tf1-charrnn-space_(converted),_own_text,_stream wlm20_doc=torch_word_language_model_(tied,_2_layers,_20_units),_stream ml5_shakespeare_doc=ml5_charRNN_shakespeare_(TF1_BasicLSTM,_2_layers),_fairytales,_stream ml5_dubois_doc=ml5_charRNN_dubois_(TF1_BasicLSTM,_2_layers),_fairytales,_stream nie_doc=tfjs_keras2.1.5_nietzsche_char,_fairytales_lowercased,_stream nyt_sent=tfjs_keras2.2.4_nyt-headlines_word,_sentences_(out_of_domain) pk_sent=onnx_(tf2onnx_Keras)_pkrupee_next-word,_own_text,_sentences" O=$O HERE=$HERE bash "$HERE/mk_table.sh"
