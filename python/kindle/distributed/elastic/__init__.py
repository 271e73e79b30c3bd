"""torch.distributed.elastic's names that training scripts import (the launcher is
kindle.distributed.run)."""
