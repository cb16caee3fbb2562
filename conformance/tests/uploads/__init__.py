"""VER-5 and VER-6: uploads of many writers and streamed files."""
