"""The paper's experiments at CPU scale, apart from the speed benchmarks: Tables 5-8
(`tables`), the one-hour recipe against random weights (`pretrain_recipe`, on the English
corpus `english_corpus` assembles), held-out masked LM by kind of position
(`masked_lm_by_kind`) and the next-sentence objective's seeds (`nsp_seeds`). Each runs as
`python -m research.paper.<name>`; research/README.md says what each answered."""
