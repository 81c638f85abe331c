#!/bin/bash
# Called by run.sh (O: its jsonl folder, HERE: this folder); prints the table.
R="/usr/bin/python3 $HERE/row.py"
{
echo '| model, text | precision | tokens | mean KL | max KL | max \|Δ ln p\| | top-1 | PPL fp32 → low | ΔPPL/PPL |'
echo '|---|---|--:|--:|--:|--:|--:|--:|--:|'
$R "fairytales-word (bundled), sentences" $O/fw.bf16.jsonl $O/fw.int8.jsonl
$R "charrnn-space (bundled), own text, stream" $O/cs_own.bf16.jsonl $O/cs_own.int8.jsonl
$R "charrnn-space (bundled), fairytales valid, stream" $O/cs_valid_doc.bf16.jsonl $O/cs_valid_doc.int8.jsonl
$R "charrnn-space (bundled), fairytales valid, sentences" $O/cs_valid_sent.bf16.jsonl $O/cs_valid_sent.int8.jsonl
$R "torch word_language_model (tied, 2 layers), stream" $O/wlm_doc.bf16.jsonl $O/wlm_doc.int8.jsonl
$R "torch char LSTM, stream" $O/tchar_doc.bf16.jsonl $O/tchar_doc.int8.jsonl
$R "keras3 ml-wordpred, sentences (out of domain)" $O/mlwp_sent.bf16.jsonl $O/mlwp_sent.int8.jsonl
$R "keras3 cs-nextword, 200 sentences" $O/cs200_sent.bf16.jsonl $O/cs200_sent.int8.jsonl
$R "keras3 shakespeare char (2 layers), stream" $O/shk_doc.bf16.jsonl $O/shk_doc.int8.jsonl
$R "tf0.12 char-rnn artclasses, stream" $O/art_doc.bf16.jsonl $O/art_doc.int8.jsonl
$R "keras2 char one-hot, own text, stream" $O/k2_doc.bf16.jsonl $O/k2_doc.int8.jsonl
for x in $EXTRA; do n=${x%%=*}; l=${x#*=}; [ -f $O/$n.int8.jsonl ] && $R "${l//_/ }" $O/$n.bf16.jsonl $O/$n.int8.jsonl; done
} 
