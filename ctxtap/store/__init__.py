"""The shared store: captures on S3-compatible object storage, queried in place (issue 41).

`push_capture` uploads a finished, redacted capture; `ls`, `pull` and `rm` work from the partition
layout (`layout.py`); `query.connect_store` gives DuckDB the named views over the store's
partitions as pyarrow datasets, so only the partitions and columns a query needs are read.
"""

from ctxtap.store.location import StoreError, StoreURL, is_store_url
from ctxtap.store.push import PushResult, push_capture

__all__ = ["PushResult", "StoreError", "StoreURL", "is_store_url", "push_capture"]
