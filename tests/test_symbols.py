from syntaxlm.text.symbols import nonterminal_symbols


def test_symbol_spelling_and_order():
    assert nonterminal_symbols({"S", "NP"}, "choe-charniak") == ["(NP", "(S", "NP)", "S)"]
    assert nonterminal_symbols({"S", "NP"}, "rnng") == ["NT(NP)", "NT(S)", "REDUCE"]
    assert nonterminal_symbols(["NP", "NP"], "both") == ["(NP", "NP)", "NT(NP)", "REDUCE"]
    assert nonterminal_symbols({"S"}, "none") == []
