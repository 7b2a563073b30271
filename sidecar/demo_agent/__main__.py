import sys

from sidecar.demo_agent import main

sys.exit(main())
