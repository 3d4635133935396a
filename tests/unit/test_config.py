"""Loading configurations: names in file order, and one-line errors with file:line."""

import pytest

from zodbshootout.config.loader import ConfigError, load_config
from zodbshootout.storages import embedded_zeo_sections, single_process_reason

from support import configs


def test_section_names_become_columns_in_file_order(write_config):
    path = write_config("""
        <zodb zebra>
          <mappingstorage/>
        </zodb>
        <zodb alpha>
          <mappingstorage/>
        </zodb>
    """)
    assert load_config(path, data_dir="/tmp").names == ["zebra", "alpha"]


def test_relstorage_and_own_components_need_no_import(write_config):
    path = write_config("""
        <zodb sqlite>
          <relstorage>
            <sqlite3>
              data-dir /tmp/never-opened
            </sqlite3>
          </relstorage>
        </zodb>
        <zodb zeo>
          <embeddedzeo>
            <mappingstorage/>
          </embeddedzeo>
        </zodb>
    """)
    config = load_config(path, data_dir="/tmp")
    assert config.names == ["sqlite", "zeo"]
    assert len(embedded_zeo_sections(config.databases["zeo"])) == 1
    assert embedded_zeo_sections(config.databases["sqlite"]) == []


def test_typo_in_key_names_file_and_line(write_config):
    path = write_config("""\
        <zodb one>
          <filestorage>
            paht /tmp/x.fs
          </filestorage>
        </zodb>
    """)
    with pytest.raises(ConfigError) as info:
        load_config(path, data_dir="/tmp")
    message = str(info.value)
    assert message.startswith(f"{path}:3: ")
    assert "paht" in message
    assert "\n" not in message


def test_missing_section_name_is_an_error(write_config):
    path = write_config("""\
        <zodb>
          <mappingstorage/>
        </zodb>
    """)
    with pytest.raises(ConfigError, match=rf"^{path}:\d+: .*name"):
        load_config(path, data_dir="/tmp")


def test_duplicate_section_name_is_an_error(write_config):
    path = write_config("""\
        <zodb same>
          <mappingstorage/>
        </zodb>
        <zodb same>
          <mappingstorage/>
        </zodb>
    """)
    # ZConfig notices the duplicate where the second section ends.
    with pytest.raises(ConfigError, match=rf"^{path}:6: .*re-used.*'same'"):
        load_config(path, data_dir="/tmp")


def test_unknown_section_type_names_line(write_config):
    path = write_config("""\
        <zodb one>
          <nosuchstorage>
          </nosuchstorage>
        </zodb>
    """)
    with pytest.raises(ConfigError, match=rf"^{path}:2: .*nosuchstorage"):
        load_config(path, data_dir="/tmp")


def test_a_relstorage_adapter_outside_relstorage_is_told_as_relstorage_tells_it(write_config):
    # The text never says "relstorage", so it is parsed without RelStorage's
    # component first; the error still comes from the whole schema.
    path = write_config("""\
        <zodb one>
          <sqlite3>
            data-dir /tmp/never-opened
          </sqlite3>
        </zodb>
    """)
    with pytest.raises(ConfigError) as info:
        load_config(path, data_dir="/tmp")
    expected = "no matching section defined for type='sqlite3', name='None'"
    assert str(info.value) == f"{path}:2: {expected}"


def test_an_included_relstorage_section_needs_no_import(write_config):
    included = write_config(configs.sqlite(), name="included.conf")
    path = write_config(f"%include {included}\n")
    assert load_config(path, data_dir="/tmp").names == ["sqlite"]


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(str(tmp_path / "absent.conf"), data_dir="/tmp")


def test_data_dir_is_substituted(write_config, tmp_path):
    path = write_config(configs.filestorage("fs"))
    config = load_config(path, data_dir=str(tmp_path))
    storage = config.databases["fs"].config.storage
    assert storage.config.path == f"{tmp_path}/fs.fs"


def test_filestorage_is_single_process_but_zeo_wrapped_is_not(write_config):
    path = write_config("""
        <zodb fs>
          <filestorage>
            path /tmp/never.fs
          </filestorage>
        </zodb>
        <zodb served>
          <embeddedzeo>
            <filestorage>
              path /tmp/never.fs
            </filestorage>
          </embeddedzeo>
        </zodb>
    """)
    config = load_config(path, data_dir="/tmp")
    assert "FileStorage" in single_process_reason(config.databases["fs"])
    assert single_process_reason(config.databases["served"]) is None


def test_memory_storages_never_work_across_processes(write_config):
    from zodbshootout.storages import process_mode_reason

    path = write_config("""
        <zodb mem>
          <mappingstorage/>
        </zodb>
        <zodb fs>
          <filestorage>
            path /tmp/never.fs
          </filestorage>
        </zodb>
    """)
    config = load_config(path, data_dir="/tmp")
    # The readers are other processes than the writers: memory is gone even with one.
    assert "--threads" in process_mode_reason(config.databases["mem"], 1)
    assert process_mode_reason(config.databases["fs"], 1) is None
    assert "-c 1" in process_mode_reason(config.databases["fs"], 2)
