def test_b_needs_service(service):
    assert service


def test_b_plain(fine):
    assert fine == "fine"
