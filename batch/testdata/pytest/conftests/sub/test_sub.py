def test_sub(greeting, who, tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.setenv("RIPPLE_T", "1")
    print("out")
    assert capsys.readouterr().out == "out\n"
    assert (greeting, who) == ("hello", "root/sub")
    assert tmp_path.is_dir()


def test_sub_fails(who):
    assert who == "root"
