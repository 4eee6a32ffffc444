from rag_eval.cli import main

raise SystemExit(main())
