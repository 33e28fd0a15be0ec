//! A serializer that writes a row as JSON text with a patch's fields in place of its own.
//!
//! Only a struct can be patched (every row type is one); anything else is an error, not a
//! guess.

use serde::{
    Serialize,
    ser::{self, Impossible, SerializeStruct},
};
use serde_json::{Error, Map, Value};

/// Writes the struct it is given to `out`, each field named in `patch` written from the
/// patch (left out when the patch says `null`), each field the patch names but the struct
/// skips (`skip_serializing_if`) written from the patch too.
pub(super) struct Patched<'a> {
    out: &'a mut Vec<u8>,
    patch: &'a Map<String, Value>,
}

impl<'a> Patched<'a> {
    pub(super) fn new(out: &'a mut Vec<u8>, patch: &'a Map<String, Value>) -> Self {
        Self { out, patch }
    }
}

/// The struct being written: whether a field has been written yet (for the commas).
pub(super) struct Fields<'a> {
    out: &'a mut Vec<u8>,
    patch: &'a Map<String, Value>,
    first: bool,
}

impl Fields<'_> {
    fn field(&mut self, key: &str, value: &(impl Serialize + ?Sized)) -> Result<(), Error> {
        self.out.push(if self.first { b'{' } else { b',' });
        self.first = false;
        serde_json::to_writer(&mut *self.out, key)?;
        self.out.push(b':');
        serde_json::to_writer(&mut *self.out, value)
    }
}

impl SerializeStruct for Fields<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        match self.patch.get(key) {
            // Removed: a missing field reads back as `None` or its default.
            Some(Value::Null) => Ok(()),
            Some(patched) => self.field(key, patched),
            None => self.field(key, value),
        }
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), Error> {
        match self.patch.get(key) {
            Some(Value::Null) | None => Ok(()),
            Some(patched) => self.field(key, patched),
        }
    }

    fn end(self) -> Result<(), Error> {
        self.out
            .extend_from_slice(if self.first { b"{}" } else { b"}" });
        Ok(())
    }
}

fn not_a_struct() -> Error {
    ser::Error::custom("only a struct row can be patched")
}

/// Every serializer method but `serialize_struct`: an error.
macro_rules! refuse {
    ($($name:ident($($arg:ty),*);)*) => {
        $(fn $name(self, $(_: $arg),*) -> Result<(), Error> {
            Err(not_a_struct())
        })*
    };
}

impl<'a> ser::Serializer for Patched<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Fields<'a>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Fields<'a>, Error> {
        Ok(Fields {
            out: self.out,
            patch: self.patch,
            first: true,
        })
    }

    refuse! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_char(char);
        serialize_str(&str);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Error> {
        Err(not_a_struct())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(not_a_struct())
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(not_a_struct())
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(not_a_struct())
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(not_a_struct())
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(not_a_struct())
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(not_a_struct())
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(not_a_struct())
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(not_a_struct())
    }
}
