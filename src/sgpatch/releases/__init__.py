"""The release cache: pristine SGLang releases from the package index, verified by their RECORD."""
