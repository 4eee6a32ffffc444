from rag_app.cli import main

raise SystemExit(main())
