"""The fused local judge: signals a small model is good at (:mod:`.signals`, :mod:`.text`), a fitted map to
the human scale (:mod:`.model`), and the nested cross-validation that fits it (:mod:`.fit`)."""
