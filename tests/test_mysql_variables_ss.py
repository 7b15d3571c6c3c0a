"""mysql_variables: `mysql -ss` SHOW VARIABLES (no header line), as pt-mysql-summary saves it."""

from __future__ import annotations

import pytest

from perfkit.errors import ParseError
from perfkit.parsers import mysql_variables, sniff_kind
from perfkit.parsers._common import skips_of

from .conftest import FIXTURES

PATH = FIXTURES / "corpus" / "mysql_variables" / "pt-mysql-summary-temp002-mysql-variables"


def test_headerless_variables_read() -> None:
    df = mysql_variables.parse(PATH)
    assert len(df) == 364  # lines 1-364, auto_increment_increment .. wait_timeout
    assert df["timestamp"].isna().all()
    v = df.set_index("name")
    assert v.loc["auto_increment_increment", "number"] == 1  # line 1: auto_increment_increment<TAB>1
    assert v.loc["max_connections", "number"] == 151
    assert v.loc["innodb_buffer_pool_size", "number"] == 134217728
    assert v.loc["version", "value"] == "5.5.20-rel24.1"
    assert v.loc["datadir", "value"] == "/var/lib/mysql/"
    assert v.loc["wait_timeout", "number"] == 28800  # line 364, the last variable
    # lines 365-372: pt-mysql-summary's own `pt-summary-internal-now   2012-03-23 21:05:32`, no tab
    skips = skips_of(df)
    assert skips.count == 8 and "line 365 'pt-summary-internal-current_time" in skips.summary()


def test_headerless_variables_sniffed_and_not_other_tab_files() -> None:
    text = PATH.read_text()[:8192]
    assert mysql_variables.sniff(text) and sniff_kind(text) == "mysql_variables"
    # SHOW STATUS's -ss output: capitalised names, not claimed
    assert not mysql_variables.sniff("Aborted_clients\t0\nAborted_connects\t2\nUptime\t100\n")
    # lowercase name<TAB>value, but no server variable among them
    assert not mysql_variables.sniff("alpha\t1\nbeta\t2\ngamma\t3\n")


def test_headerless_bad_name_is_an_error_naming_the_line() -> None:
    text = "autocommit\tON\nback_log\t50\nbad name\t1\n"
    with pytest.raises(ParseError) as info:
        mysql_variables.parse(text)
    assert info.value.line_no == 3
