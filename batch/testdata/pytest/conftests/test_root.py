def test_root(greeting, who, request):
    assert (greeting, who) == ("hello", "root")
    assert ("autouse", "root") in request.node.user_properties
