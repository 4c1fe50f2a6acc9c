"""What a study gives back: the labeled dataset (CSV, JSONL, Parquet) and its restore, and the
paper's tables and charts."""
