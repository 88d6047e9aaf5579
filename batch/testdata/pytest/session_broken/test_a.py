def test_a_needs_service(service):
    assert service


def test_a_plain(fine):
    assert fine == "fine"
