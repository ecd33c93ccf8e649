"""The one-hour CPU recipe of `pretrain_from_text.py` (from scratch): the model, masking
and schedule that fit a small budget, and the limits the command warns about. Each rule
is stated where it is set; the runs that chose it are on research/RESULTS.md and in
research/RESULTS-archive.md (research/README.md says which experiment answered what).

Pipeline position: read by `tasks.pretraining.from_text`, which turns it into a plan
(steps, warm-up, records) for the budget; no TensorFlow here.
"""

# The recipe. Against BERT's own settings at this scale:
#  * 40% of the tokens masked (Wettig et al. 2022), weights initialised at 0.05 rather
#    than 0.02 (a head's query-key products start large enough to learn from), the
#    position table started as sinusoids, and a peak learning rate of 7e-4: together
#    they leave the frequent-token plateau (predicting frequent tokens whatever the
#    context) in a third of the steps BERT's settings need;
#  * the pooled vector is "pair_mean" (`BertConfig.pooling`: the two segments' means
#    compared), which the masked LM does not train but fine-tuning on sentence pairs can
#    use from the start;
#  * no dropout while pre-training (Cramming, Geiping & Goldstein 2022): a short run is
#    not over-fitting, and dropout costs it held-out accuracy; the exported
#    bert_config.json keeps the model's 0.1 for fine-tuning.
RECIPE = {
    "model": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
              "intermediate_size": 1024, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
              "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 128,
              "type_vocab_size": 2, "initializer_range": 0.05,
              "position_embedding_init": "sinusoidal", "pooling": "pair_mean"},
    "vocab_size": 8192,
    "max_seq_length": 128,
    "masked_lm_prob": 0.40,
    "max_predictions_per_seq": 52,
    "objective": "mlm",
    "train_batch_size": 32,
    "learning_rate": 7e-4,
    "optimizer": "adamw_original",
    "adam_beta2": 0.999,
    "warmup_share": 0.06,
    "pretraining_dropout": 0.0,
    "max_dupe_factor": 10,
}

# The recipe's masked LM leaves the frequent-token plateau after about PLATEAU_STEPS; a
# plan of fewer than ENOUGH_STEPS (twice that) may end near random weights, and the
# command warns before training (`from_text.shortfall`), naming the budget that buys
# this machine REFERENCE_PLAN_STEPS: the plan of the recipe's reference run (an hour on 2
# AVX2 cores).
PLATEAU_STEPS = 600
ENOUGH_STEPS = 1200
REFERENCE_PLAN_STEPS = 3800

# The warm-up is `warmup_share` of the plan but at least MIN_WARMUP_STEPS (the
# reference plan's 6%): reaching the peak learning rate sooner collapses the model onto
# the unigram predictions, where it stays. A plan too short for it warms up for half its
# steps.
MIN_WARMUP_STEPS = 229

# From scratch, a corpus under SMALL_CORPUS_BYTES gives a markedly weaker model than the
# recipe's 25 MB (on 3.8 MB: 26.2% of held-out masked tokens predicted, against 37.8%,
# the same plan): the command says so before training (`from_text.small_corpus`) and
# points at adapting a released model.
SMALL_CORPUS_BYTES = 16 << 20
