"""``magnetar audit``: PySpark jobs that check replication (DESIGN.md §7).

The only package that imports pyspark (and pyarrow), and only in its Spark modules
(``sources``, ``checks``, ``spark``, the ``*_job`` modules), so that this package's plain parts
import without the ``audit`` extra:

- :mod:`.scans` reads the metadata store and the bookies' ``ListEntries`` as plain rows,
  :mod:`.bridge` streams that asyncio code into Spark's synchronous readers;
- :mod:`.sources` are the Python data sources over them, partitioned for executors;
- :mod:`.checks` are the ledger checks as DataFrame transformations;
- :mod:`.findings` the finding kinds, the verdict and the exit codes; :mod:`.report` the
  summary, terminal table and HTML page;
- :mod:`.ledgers_job` runs ``magnetar audit ledgers``.
"""

from magnetar.audit.errors import AuditError, BadAuditInput, Unreachable
from magnetar.audit.findings import ExitCode, Kind

__all__ = ["AuditError", "BadAuditInput", "ExitCode", "Kind", "Unreachable"]
