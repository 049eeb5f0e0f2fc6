"""``python -m PyCA.Apps.register``: runs the registration command line,
``pyca-register`` (its module is PyCA.Apps.register_cli).

This file is only run, never imported: ``PyCA.Apps.register`` is the
function :func:`PyCA.Apps.register`, and importing a module of that name
would put the module in the function's place on the package. An import of
it therefore fails with an ImportError that names PyCA.Apps.register_cli.
"""
import sys

if __name__ != '__main__':
    raise ImportError("PyCA.Apps.register is the function register(), not a module: the command line "
                      "is PyCA.Apps.register_cli (python -m PyCA.Apps.register runs it)", name=__name__)

from PyCA.Apps.register_cli import main  # noqa: E402

sys.exit(main())
