"""``python -m logicval_hf.cli ...`` runs the ``logicval`` command."""

import sys

from logicval_hf.cli.main import main

sys.exit(main())
