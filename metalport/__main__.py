import sys

from metalport.cli import main

sys.exit(main())
