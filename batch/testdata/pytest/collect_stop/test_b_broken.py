"""A module that does not import: a collection error."""

import no_such_module_here  # noqa: F401
