"""Repository-wide pytest set-up.

The component folder ``pager/`` has the same name as the package inside it
(``pager/pager``). Under ``--import-mode=importlib`` pytest names a test module
after its path (``pager.tests.test_x``) and would create a stand-in ``pager``
module; importing the real packages first keeps them in ``sys.modules``.
"""

import orbit_model  # noqa: F401
import pager  # noqa: F401
import satpage  # noqa: F401
